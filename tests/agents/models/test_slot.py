"""`ModelSlot`: customer turns first on a one-request model; background calls yield."""

from __future__ import annotations

import asyncio

import pytest

from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.models.slot import ModelSlot, YieldingModel


class Held:
    """A model whose every call waits for `go`, noting each call started and given up."""

    name = "held"
    profile = ModelProfile()

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.started = 0
        self.given_up = 0
        self.in_call = asyncio.Event()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.started += 1
        self.in_call.set()
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            self.given_up += 1
            self.in_call.clear()
            raise
        return LlmResponse.from_text(f"answer {self.started}")


async def test_slot_a_turn_cancels_a_background_call_which_is_asked_again_after_it() -> None:
    slot, held = ModelSlot(), Held()
    background = asyncio.ensure_future(YieldingModel(held, slot).generate(LlmRequest()))
    await held.in_call.wait()
    async with slot.turn():
        await asyncio.sleep(0)
        # Given up at once, and not asked again while the turn runs.
        assert (held.started, held.given_up, slot.yielded) == (1, 1, 1)
        held.go.set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert held.started == 1 and not background.done()
    answer = await background
    assert answer.text == "answer 2" and (held.started, held.given_up) == (2, 1)


async def test_slot_a_background_call_waits_for_every_turn_to_end() -> None:
    slot, held = ModelSlot(), Held()
    held.go.set()
    order: list[str] = []
    first, second = slot.turn(), slot.turn()
    await first.__aenter__()
    await second.__aenter__()
    background = asyncio.ensure_future(YieldingModel(held, slot).generate(LlmRequest()))
    await asyncio.sleep(0)
    await first.__aexit__(None, None, None)
    order.append("first turn ended")
    await asyncio.sleep(0)
    assert held.started == 0
    await second.__aexit__(None, None, None)
    order.append("second turn ended")
    await background
    order.append("background answered")
    assert order == ["first turn ended", "second turn ended", "background answered"]
    assert slot.yielded == 0 and held.started == 1


async def test_slot_cancelling_the_caller_cancels_its_call_for_good() -> None:
    slot, held = ModelSlot(), Held()
    background = asyncio.ensure_future(YieldingModel(held, slot).generate(LlmRequest()))
    await held.in_call.wait()
    background.cancel()
    with pytest.raises(asyncio.CancelledError):
        await background
    await asyncio.sleep(0)
    async with slot.turn():
        pass
    assert (held.started, held.given_up, slot.yielded) == (1, 1, 0)
