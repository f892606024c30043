"""The scripted model's own checks: a call past the script fails, and so does a script
left unplayed, unless the model was made `partial` with a reason."""

from __future__ import annotations

import pytest

from agents.events import Part
from agents.models.base import Content, LlmRequest
from agents.models.scripted import ScriptedModel, UnexpectedModelCall, record_created


def ask(text: str) -> LlmRequest:
    return LlmRequest(agent_name="root", contents=[Content(role="user", parts=(Part(text=text),))])


async def test_scripted_model_plays_its_steps_in_order_then_refuses_more() -> None:
    model = ScriptedModel(["one", "two"])
    assert [(await model.generate(ask(q))).text for q in ("a", "b")] == ["one", "two"]
    model.assert_complete()
    with pytest.raises(UnexpectedModelCall, match="unexpected model call #3"):
        await model.generate(ask("c"))


async def test_scripted_model_left_unplayed_fails_by_name_and_count() -> None:
    model = ScriptedModel(["one", "two", "three"], name="billing")
    await model.generate(ask("a"))
    with pytest.raises(AssertionError, match="2 scripted model steps of 'billing' were never"):
        model.assert_complete()
    assert model.remaining == 2
    await model.generate(ask("b"))
    await model.generate(ask("c"))  # played to the end, as the suite checks after this test


def test_record_created_collects_every_model_made_inside_the_block() -> None:
    before = ScriptedModel([])
    with record_created() as made:
        inside = ScriptedModel([], partial="never run: only its creation is counted")
        with record_created() as nested:
            deeper = ScriptedModel([])
    after = ScriptedModel([])
    assert made == [inside, deeper] and nested == [deeper]
    assert before not in made and after not in made
    assert inside.partial == "never run: only its creation is counted"
    assert deeper.partial is None
