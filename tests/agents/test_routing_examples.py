"""Routing examples declared in a tree (`examples:`) reach every model that routes.

The tree here is a bookshop's, not the shipped support tree: its names, descriptions and
examples share nothing with it. The stand-in decide-first model routes as a model that
reads the examples would: it picks the option whose listed examples share the most words
with the customer's message, so the routes follow the examples the tree declares, and
only those (the descriptions alone do not tell these messages apart).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.llm.routing_examples import closest_examples, described, similarity
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation

BOOKSHOP = """\
root: front_desk
agents:
  front_desk:
    description: The shop's front desk.
    examples:
      - Good morning, are you open on Sundays?
      - Thanks a lot, goodbye!
    instruction: Welcome customers of the bookshop and pass them on when needed.
    sub_agents: [orders_desk, catalogue_help]
  orders_desk:
    description: One of our desks.
    examples:
      - I paid twice for the same cookbook.
      - Can I get a receipt for the atlas I bought?
      - My card was refused at checkout for a novel.
    instruction: Help with purchases.
    disallow_transfer_to_parent: true
    disallow_transfer_to_peers: true
  catalogue_help:
    type: sequential
    description: Another of our desks.
    examples:
      - Do you have anything by Ursula Le Guin?
      - Is the new poetry anthology in stock?
    sub_agents: [finder]
  finder:
    description: Looks a title up.
    instruction: Say whether the title is on the shelves.
"""

_OPTION = re.compile(r"^- (\w+): .*?for example: (.*)\.$", re.MULTILINE)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - {"the", "a", "for", "i", "you", "are"}


def by_examples(message: str) -> Callable[[LlmRequest], str]:
    """A decision as a model that reads the listed examples would take it."""

    def decide(request: LlmRequest) -> str:
        listed = {
            name: [e.strip().strip('"') for e in examples.split('"; "')]
            for name, examples in _OPTION.findall(request.system_instruction)
        }
        assert set(listed) == {"orders_desk", "catalogue_help", "front_desk"}
        overlap = {
            name: max(len(words(message) & words(e)) for e in examples)
            for name, examples in listed.items()
        }
        return json_text(max(overlap, key=lambda name: overlap[name]))

    return decide


def bookshop(tmp_path: Path) -> Path:
    path = tmp_path / "bookshop.yaml"  # what AGENT_TREE_FILE points at
    path.write_text(BOOKSHOP, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("message", "answered_by"),
    [
        ("I was charged twice for one cookbook, can I get a receipt?", "orders_desk"),
        ("Have you got any poetry by Le Guin in stock?", "finder"),
        ("Good evening, are you open on Sunday mornings?", "front_desk"),
    ],
)
async def test_a_tree_routes_as_its_examples_say(
    tmp_path: Path, message: str, answered_by: str
) -> None:
    model = ScriptedModel([by_examples(message), "Here to help."], decide_first=True)
    root = build_support_tree(model=model, path=bookshop(tmp_path))
    turn = await Conversation(root, model).send(message)
    model.assert_complete()
    assert turn[-1] == (answered_by, "Here to help.")
    decision = model.requests[0]
    assert decision.response_schema is not None
    assert decision.response_schema["enum"] == ["orders_desk", "catalogue_help", "front_desk"]
    # Each option carries its own examples, quoted, under its description.
    assert (
        "- orders_desk: hand the conversation to this agent. It handles: One of our desks. "
        'Requests it handles, for example: "I paid twice for the same cookbook."; '
        '"Can I get a receipt for the atlas I bought?"; '
        '"My card was refused at checkout for a novel.".'
    ) in decision.system_instruction


async def test_a_one_call_model_sees_the_examples_in_its_transfer_instruction(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["Welcome to the bookshop!"])
    root = build_support_tree(model=model, path=bookshop(tmp_path))
    turn = await Conversation(root, model).send("hello")
    assert turn == [("front_desk", "Welcome to the bookshop!")]
    (request,) = model.requests
    assert [t.name for t in request.tools] == ["transfer_to_agent"]
    assert '"Is the new poetry anthology in stock?"' in request.system_instruction
    assert '"I paid twice for the same cookbook."' in request.system_instruction


def test_an_agent_without_examples_keeps_its_description(tmp_path: Path) -> None:
    root = build_support_tree(model="m", path=bookshop(tmp_path))
    finder = root.find_agent("finder")
    assert finder is not None and finder.examples == ()
    assert described(finder) == "Looks a title up."


def test_the_closest_examples_share_the_most_words(tmp_path: Path) -> None:
    root = build_support_tree(model="m", path=bookshop(tmp_path))
    near = closest_examples("can I have a receipt for my atlas and cookbook", root.walk())
    assert [(n.agent, n.example) for n in near] == [
        ("orders_desk", "Can I get a receipt for the atlas I bought?"),
        ("orders_desk", "I paid twice for the same cookbook."),
    ]
    assert closest_examples("zzz", root.walk()) == []
    assert similarity("Updating apps", "the app updates") == 1.0


def test_the_shipped_tree_declares_examples_for_each_routable_agent() -> None:
    root = build_support_tree(model="m")
    for name in ("support_supervisor", "billing_agent", "tech_support"):
        agent = root.find_agent(name)
        assert agent is not None and 3 <= len(agent.examples) <= 7
