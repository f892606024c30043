"""The checklist the summariser gets with the transcript: what the validator will demand.

Small models drop identifiers, cite the wrong turn and fold promises into facts. The same
deterministic extractors that the validator uses (high-value entities, agent promises)
run before the model call, and their findings follow the fenced transcript as a plan:

- one commitment per agent promise, citing the promise's event, with the values the
  promise sentence holds;
- the remaining values grouped by event, fewest events first (a greedy set cover over
  the events that mention each value), so each group becomes one fact citing one event
  that supports every value in it, which is exactly what the relevance check asks.

The plan is computed by code from the transcript, so it adds no instruction from the
conversation itself; sensitive values are never listed and are masked in every quote
(promises, excerpts), and values the rendering cut
(the model never saw them) are not demanded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.events import Event
from agents.summary.checks.coverage import Promise, event_content, find_promises, sentences
from agents.summary.entities import Entity, as_entity, mask_text, mentions

MAX_LISTED = 40
MAX_PROMISES = 12
HEADER = "Checklist computed from the transcript by the system (not part of the transcript):"


@dataclass(frozen=True)
class FactGroup:
    """Values one fact should carry, and the event that mentions all of them."""

    event_id: str
    values: tuple[str, ...]


def demanded_values(entities: list[Entity], visible: str | None = None) -> list[Entity]:
    """The high-value, non-sensitive entities the validator will ask for: those still in
    the rendering when one is given."""
    return [
        e
        for e in entities
        if e.high_value and not e.sensitive and (visible is None or mentions(visible, e))
    ][:MAX_LISTED]


def group_values(
    events: list[Event], values: list[Entity], *, exclude: set[str] | None = None
) -> list[FactGroup]:
    """Group `values` by the events that mention them, covering all with few events.

    Greedy set cover: repeatedly take the message that mentions the most values still
    uncovered (earlier messages win ties); tool calls and results only cover values no
    message mentions, because small models skip lines about payloads and a message is
    something a transport can link to. A value no event mentions (it cannot happen for values
    extracted from these events) is left out rather than given a false source.
    """
    content = {event.id: event_content(event) for event in events}
    order = {event.id: index for index, event in enumerate(events)}
    # A message reads better than a tool payload and is something a transport can link to.
    tool = {e.id for e in events if e.function_calls or e.function_responses}
    skip = {v.casefold() for v in exclude or set()}
    mentioned_in: dict[str, set[str]] = {}
    for entity in values:
        if entity.value.casefold() in skip:
            continue
        where = {i for i, text in content.items() if mentions(text, entity)}
        if where:
            mentioned_in[entity.value] = where
    groups: list[FactGroup] = []
    uncovered = dict(mentioned_in)
    while uncovered:
        counts: dict[str, int] = {}
        for where in uncovered.values():
            for event_id in where:
                counts[event_id] = counts.get(event_id, 0) + 1
        best = min(counts, key=lambda i: (i in tool, -counts[i], order[i]))
        covered = tuple(v for v, where in uncovered.items() if best in where)
        groups.append(FactGroup(best, covered))
        for value in covered:
            del uncovered[value]
    return sorted(groups, key=lambda g: order[g.event_id])


@dataclass(frozen=True)
class Checklist:
    """The plan for one transcript: promises (each with the demanded values its sentence
    holds) and the other values grouped by event, each group with its excerpt."""

    promises: tuple[tuple[Promise, tuple[str, ...]], ...] = ()
    groups: tuple[tuple[FactGroup, str], ...] = ()

    def text(self) -> str:
        """The checklist as it follows the fence, or "" when there is nothing to demand."""
        if not self.promises and not self.groups:
            return ""
        lines = [HEADER]
        if self.promises:
            lines.append(
                "Commitments: the agent made these promises. Write one commitment per line, "
                "citing its event, keeping the values shown:"
            )
            for promise, kept in self.promises:
                shown = f" (keep {', '.join(kept)})" if kept else ""
                lines.append(f'- {promise.event_id}: "{promise.sentence[:200]}"{shown}')
        if self.groups:
            lines.append(
                "Facts: write one fact per line below, citing that line's event, saying what "
                "the event says about each value and copying every value exactly:"
            )
            lines.extend(
                f"- {g.event_id} ({where}): {', '.join(g.values)}" for g, where in self.groups
            )
        return "\n".join(lines)

    def locations(self) -> dict[str, str]:
        """Where the checklist sends each value, for naming it in a retry:
        `{value casefolded: 'e5 (user: "712")'}`."""
        found = {
            value.casefold(): f"{promise.event_id} (the agent's promise)"
            for promise, kept in self.promises
            for value in kept
        }
        for group, where in self.groups:
            found.update({v.casefold(): f"{group.event_id} ({where})" for v in group.values})
        return found


def build_checklist(
    events: list[Event], entities: list[Entity], *, visible: str | None = None
) -> Checklist:
    """The plan for `events`; `visible` is the rendered transcript: values it does not
    show are not demanded."""
    values = demanded_values(entities, visible)
    # The checklist quotes agents outside the fence: secrets are masked here as they are
    # in the transcript, so no PIN or access code reaches the model by this path either.
    promises = [
        replace(p, sentence=mask_text(p.sentence, entities))
        for p in find_promises(events)[:MAX_PROMISES]
    ]
    in_promises = _values_in_promises(promises, values)
    groups = group_values(events, values, exclude={v for vs in in_promises for v in vs})
    by_id = {event.id: event for event in events}
    return Checklist(
        promises=tuple(zip(promises, map(tuple, in_promises), strict=True)),
        groups=tuple(
            (g, mask_text(excerpt(by_id[g.event_id], g.values), entities)) for g in groups
        ),
    )


def checklist(events: list[Event], entities: list[Entity], *, visible: str | None = None) -> str:
    """The checklist text for `events` (see `build_checklist`)."""
    return build_checklist(events, entities, visible=visible).text()


def excerpt(event: Event, values: tuple[str, ...], *, limit: int = 160) -> str:
    """Where in the event the values are: the sentences of a message that hold them, or
    which tool call or result it is."""
    if event.function_calls:
        return f"{event.author} calls {event.function_calls[0].name}"
    if event.function_responses:
        return f"{event.author}: result of {event.function_responses[0].name}"
    found = [
        s.strip() for s in sentences(event.text) if any(mentions(s, as_entity(v)) for v in values)
    ]
    quote = " ".join(found) or event.text.strip()
    if len(quote) > limit:
        quote = quote[: limit - 3].rstrip() + "..."
    quote = quote.replace('"', "'").replace("\n", " ")
    return f'{event.author}: "{quote}"'


def _values_in_promises(promises: list[Promise], values: list[Entity]) -> list[list[str]]:
    """For each promise, the demanded values its sentence holds (each value once)."""
    taken: set[str] = set()
    out: list[list[str]] = []
    for promise in promises:
        kept = [
            v.value
            for v in values
            if v.value.casefold() not in taken and mentions(promise.sentence, v)
        ]
        taken.update(v.casefold() for v in kept)
        out.append(kept)
    return out
