"""What one agent may do in one step of a decide-first model (`agents.llm.decision`):
its transfer targets, its tools, and the tree's other internal names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.llm.choice_scores import CHOICE_SCORINGS, ChoiceScoring
from agents.llm.decision_requests import Choice
from agents.llm.instructions import template_words
from agents.llm.routing_examples import described
from agents.llm.transfer import transfer_targets
from agents.models.base import DECISION_LAYOUTS, DecisionLayout, Model, ToolDeclaration

if TYPE_CHECKING:
    from agents.context import InvocationContext
    from agents.llm.agent import LlmAgent


def choice_scoring(model: Model) -> ChoiceScoring:
    """How `model`'s decisions are scored (`agents.llm.choice_scores`); default greedy."""
    scoring = getattr(model, "choice_scoring", "greedy")
    return scoring if scoring in CHOICE_SCORINGS else "greedy"


def decision_layouts(model: Model) -> tuple[DecisionLayout, ...]:
    """How `model`'s decisions are laid out, in order (`agents.llm.decision`); default the
    question alone. Unknown names are left out."""
    layouts = tuple(
        layout for layout in getattr(model, "decision_layouts", ()) if layout in DECISION_LAYOUTS
    )
    return layouts or ("question",)


@dataclass(frozen=True)
class StepOptions:
    """What one agent may do in one step, from the tree."""

    agent: str
    description: str
    instruction: str
    targets: tuple[tuple[str, str], ...] = ()
    tools: tuple[ToolDeclaration, ...] = ()
    called: frozenset[str] = frozenset()
    others: tuple[str, ...] = ()
    """The tree's other internal names (agents and tools not among `targets` and
    `tools`, the agent itself included): a reply must not name them either."""
    own_words: str = ""
    """What a reply must not recite: the instruction's own words, without the state values
    filled into it (a pipeline step's input, e.g. `{diagnosis}`, is data a reply may and
    should repeat). Empty: the whole `instruction`."""

    @property
    def unnamed(self) -> tuple[str, ...]:
        """Names a reply must not contain and that no action answers: `others`, and the
        tools already called this turn ("The policy_checker has denied this request"
        names an internal tool; the call itself was real)."""
        called = tuple(sorted(t.name for t in self.tools if t.name in self.called))
        return self.others + called

    @property
    def recital_source(self) -> str:
        """The text a reply is checked against for a recital (see `own_words`)."""
        return self.own_words or self.instruction

    def choices(self, *, answer: bool = True) -> list[Choice]:
        """Targets, then the agent itself (answer), then the tools not called this turn."""
        found = [Choice(name, "transfer", text) for name, text in self.targets]
        if answer:
            found.append(Choice(self.agent, "answer", self.description))
        found.extend(
            Choice(t.name, "tool", t.description) for t in self.tools if t.name not in self.called
        )
        return found


def step_options(agent: LlmAgent, ctx: InvocationContext, instruction: str) -> StepOptions:
    """`agent`'s options now. A target that transferred to `agent` in this invocation is
    left out, so a hand-off is never bounced straight back (a ping-pong)."""
    events = [e for e in ctx.session.events if e.invocation_id == ctx.invocation_id]
    senders = {e.author for e in events if e.actions.transfer_to_agent == agent.name}
    called = {c.name for e in events if e.author == agent.name for c in e.function_calls}
    return StepOptions(
        agent=agent.name,
        description=described(agent),
        instruction=instruction,
        targets=tuple(
            (t.name, described(t)) for t in transfer_targets(agent) if t.name not in senders
        ),
        tools=tuple(t.declaration() for t in agent.tools),
        called=frozenset(called),
        others=tuple(sorted(_internal_names(agent))),
        own_words=template_words(agent.instruction) if isinstance(agent.instruction, str) else "",
    )


def _internal_names(agent: LlmAgent) -> set[str]:
    """Every agent and tool name in `agent`'s tree, minus its own targets and tools."""
    root = agent.root_agent
    names = {a.name for a in root.walk()}
    names |= {t.name for a in root.walk() for t in getattr(a, "tools", [])}
    names -= {t.name for t in transfer_targets(agent)} | {t.name for t in agent.tools}
    return names
