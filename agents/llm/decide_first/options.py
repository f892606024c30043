"""What one agent may do in one step (`agents.llm.decide_first`): its transfer targets,
its tools, and the tree's other internal names, read from the agent through `StepAgent`
(this package never imports the agent)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.llm.decide_first.choices import Choice
from agents.llm.example_vote import known_texts
from agents.llm.instructions import template_words
from agents.llm.routing_examples import described
from agents.models.base import ToolDeclaration
from agents.tools.base_tool import BaseTool


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
    known_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each agent among the options (the targets and the agent itself) with the texts it
    is known by: its description and its routing examples (`agents.llm.example_vote`)."""

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

    def decision_choices(self) -> list[Choice]:
        """The options of the step's decision: `choices()`, less every tool whose tree
        entry says which replies need it (`consult_before`) when there is an agent to hand
        the message to. Such a tool is about a reply, and no reply is written yet: the
        review consults it once a written reply needs it (`agents.llm.decide_first.review`).
        Offered beside the transfer targets, it drew requests that merely mention an
        account or money (on the embedded model the root consulted `policy_checker`
        about a failing sign-up, one more round trip, then kept the request)."""
        found = self.choices()
        if not self.targets:
            return found
        marked = {t.name for t in self.tools if t.consult_before}
        return [c for c in found if not (c.kind == "tool" and c.name in marked)]


class StepAgent(Protocol):
    """What `step_options` reads of the agent taking the step (an `LlmAgent`)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def examples(self) -> Sequence[str]:
        """Requests it handles, declared in the tree (`agents.llm.routing_examples`)."""

    @property
    def instruction(self) -> object:
        """The instruction as written: a template string, or a provider of the text."""

    @property
    def tools(self) -> Sequence[BaseTool]: ...

    @property
    def root_agent(self) -> BaseAgent: ...

    def transfer_targets(self) -> list[BaseAgent]:
        """The agents it may transfer to."""


def step_options(agent: StepAgent, ctx: InvocationContext, instruction: str) -> StepOptions:
    """`agent`'s options now. As on every model (the seed's parent rule), an agent may
    hand a request back to the agent that transferred it (a misrouted request goes back
    in the same turn); a target `agent` has already handed this invocation to is left out,
    so a hand-off is never repeated and a ping-pong ends after one round trip."""
    events = [e for e in ctx.session.events if e.invocation_id == ctx.invocation_id]
    handed = {e.actions.transfer_to_agent for e in events if e.author == agent.name}
    called = {c.name for e in events if e.author == agent.name for c in e.function_calls}
    targets = agent.transfer_targets()
    offered = [t for t in targets if t.name not in handed]
    return StepOptions(
        agent=agent.name,
        description=described(agent),
        instruction=instruction,
        targets=tuple((t.name, described(t)) for t in offered),
        tools=tuple(t.declaration() for t in agent.tools),
        called=frozenset(called),
        others=tuple(sorted(_internal_names(agent, targets))),
        own_words=template_words(agent.instruction) if isinstance(agent.instruction, str) else "",
        known_by=(
            *((t.name, known_texts(t.name, t.description, t.examples)) for t in offered),
            (agent.name, known_texts(agent.name, agent.description, agent.examples)),
        ),
    )


def _internal_names(agent: StepAgent, targets: Sequence[BaseAgent]) -> set[str]:
    """Every agent and tool name in `agent`'s tree, minus its own targets and tools."""
    root = agent.root_agent
    names = {a.name for a in root.walk()}
    names |= {t.name for a in root.walk() for t in getattr(a, "tools", [])}
    names -= {t.name for t in targets} | {t.name for t in agent.tools}
    return names
