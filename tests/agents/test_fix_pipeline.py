"""tech_support's pipeline (diagnose -> fix_writer) on a decide-first model: what
fix_writer receives, and that fix steps repeating the diagnosis are shown as written.

On the embedded model fix_writer's steps reached the user as an echo of the user's
message: the steps repeated the diagnosis, which `{diagnosis}` had filled into
fix_writer's instruction, so they were taken for a recital of the instruction and asked
for again ("that reply cannot be sent ... write the reply to the customer itself"), and
the second answer echoed the customer. Only the instruction's own words count as a
recital; the state values filled into it are the step's input.
"""

from __future__ import annotations

from agents.history import FOREIGN_PREFIX
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation

CRASH = (
    "The desktop app crashes with error 0x80070005 every time I open the settings page "
    "since yesterday's update."
)
DIAGNOSIS = (
    "Error 0x80070005 is access denied: yesterday's update reset the permissions of the "
    "settings folder, so the app cannot read its settings file and crashes."
)
FIX_STEPS = (
    "1. Yesterday's update reset the permissions of the settings folder, so the app cannot "
    "read its settings file: open the folder's properties.\n"
    "2. Give your user account full control.\n"
    "3. Restart the app and open the settings page."
)


async def test_fix_writer_gets_the_diagnosis_and_its_steps_reach_the_user() -> None:
    model = ScriptedModel([json_text("tech_support"), DIAGNOSIS, FIX_STEPS], decide_first=True)
    turn = await Conversation(build_support_tree(model=model), model).send(CRASH)
    assert turn[2:] == [("diagnose", DIAGNOSIS), ("fix_writer", FIX_STEPS)]
    _decision, diagnose, fix_writer = model.requests
    assert [c.text for c in diagnose.contents] == [CRASH]
    # fix_writer: its instruction with the diagnosis filled in from state (diagnose's
    # output_key), the customer's message, and diagnose's turn as context.
    assert fix_writer.system_instruction == (
        f"Write numbered fix steps for this diagnosis: {DIAGNOSIS}"
    )
    assert [c.text for c in fix_writer.contents] == [
        CRASH,
        f"{FOREIGN_PREFIX}[diagnose] said: {DIAGNOSIS}",
    ]
    assert fix_writer.tools == [] and fix_writer.response_schema is None
    model.assert_complete()  # the steps were not asked for again


async def test_a_reply_reciting_the_instructions_own_words_is_still_asked_again() -> None:
    instruction_words = (
        "Write numbered fix steps for this diagnosis and never promise a date for a fix "
        "release to the customer"
    )
    recital = f"Sure. {instruction_words}."
    model = ScriptedModel(
        [json_text("tech_support"), DIAGNOSIS, recital, FIX_STEPS], decide_first=True
    )
    tree = build_support_tree(model=model)
    found = tree.find_agent("fix_writer")
    found.instruction = instruction_words + ": {diagnosis}"  # type: ignore[union-attr]
    turn = await Conversation(tree, model).send(CRASH)
    assert turn[-1] == ("fix_writer", FIX_STEPS)
    assert "cannot be sent" in model.requests[-1].contents[-1].text
    model.assert_complete()
