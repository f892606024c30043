"""Handoff records built as the thread goes (`SUMMARY_MODE=incremental`), end to end over
real HTTP with signed Slack requests, on the shipped assembly (`bot.wiring.build_summarizer`
and `window_hooks` under the process's shared slot count, compaction on).

A 40-event thread (20 turns, windows of 5 invocations) is summarised window by window
as it goes; the digest at idle summarises nothing new and posts one merged record. A
window that fails twice is a named gap linked to its raw messages. `forget --user`
removes the windows holding the user's events and the next digest rebuilds them.
A window summary waits for a slot behind every waiting reply. `SUMMARY_MODE=whole` (once
default) summarises the whole thread once, at idle.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agents.events import Event
from agents.models.base import LlmRequest, LlmResponse
from agents.summary.record import HandoffRecord
from bot.config import Settings
from bot.models import Models
from bot.ops.commands import forget
from bot.slack.permalinks import ThreadLinks
from bot.threads.admission import Priority
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage.threads import ThreadKey
from tests.e2e.agent_model import AgentModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.replies import answers, wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.transcript_summarizer import TranscriptSummarizer

ROOT = "1700002000.000100"
TURNS = 20
INTERVAL = 5


def _settings(tmp_path: Path, slack: FakeSlackApi, **values: Any) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        compaction_interval=INTERVAL,
        # A hosted summary model: no completion pass, so the scripted model answers alone.
        model="openai/scripted",
        _env_file=None,
        **values,
    )


def _ts(turn: int) -> str:
    return ROOT if turn == 0 else f"1700002000.{turn + 100:06d}"


def _message(turn: int) -> str:
    return f"Question {turn} about order A-{1000 + turn}"


async def _bot(
    slack: FakeSlackApi,
    start_bot: StartBot,
    settings: Settings,
    summaries: TranscriptSummarizer,
    database: Any,
    *,
    before_windows: tuple[Any, ...] = (),
) -> BotHarness:
    """The bot as shipped for `settings`; `before_windows` hooks run between compaction
    and the window hook."""
    model = AgentModel({"support_supervisor": [f"Answer {t}." for t in range(TURNS)]})
    models = Models(
        main=model, summary=summaries, compaction=model, factory=lambda _: model, label="test"
    )
    limit = work_limit(settings)
    return await start_bot(
        support_tree(model),  # type: ignore[arg-type]
        summarizer=build_summarizer(settings, database, models),
        compaction_model=model,
        after_invocation=[*before_windows, *window_hooks(settings, database, models, limit)],
        limit=limit,
        compaction_interval=INTERVAL,
        summary_mode=settings.summary_mode,
        max_concurrent_invocations=settings.max_concurrent_invocations,
        support_lead_channel="CLEAD",
    )


async def _turn(bot: BotHarness, slack: FakeSlackApi, turn: int, user: str = "U1") -> None:
    """One message of the thread, answered."""
    text, ts = _message(turn), _ts(turn)
    slack.add_message("C1", ts=ts, text=text, user=user, thread_ts=None if turn == 0 else ROOT)
    await bot.send_event(
        channel_message(
            text, ts=ts, user=user, thread_ts=None if turn == 0 else ROOT, mention=turn == 0
        )
    )
    await wait_answers(slack, turn + 1)
    await bot.idle()


async def _converse(
    bot: BotHarness, slack: FakeSlackApi, *, speakers: dict[int, str] | None = None
) -> Any:
    """Twenty turns in one thread; returns the thread's session."""
    for turn in range(TURNS):
        await _turn(bot, slack, turn, (speakers or {}).get(turn, "U1"))
        await bot.services.runner.drain()
    return await _session(bot)


async def _session(bot: BotHarness) -> Any:
    db = bot.services.db
    thread = await db.threads.get(ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT))
    return await db.sessions.get_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )


async def _digest(bot: BotHarness) -> Any:
    [outcome] = await bot.digest_job().run_once()
    return outcome


def _conversation(session: Any) -> list[Event]:
    return [e for e in session.events if not e.is_compaction]


async def test_a_40_event_thread_gives_4_window_records_and_one_merged_record(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    summaries = TranscriptSummarizer()
    settings = _settings(tmp_path, slack, summary_mode="incremental")
    bot = await _bot(slack, start_bot, settings, summaries, database)
    session = await _converse(bot, slack)
    events = _conversation(session)
    assert len(events) == 40
    assert any(e.is_compaction for e in session.events)

    # Written as the thread went, each right after the invocation that closed it.
    windows = await database.windows.windows(session.id)
    assert len(windows) == 4
    assert [w.closed_by for w in windows] == ["compaction"] * 4
    assert len(summaries.transcripts) == 4
    by_seq = {e.seq: e for e in events}
    for window in windows:
        inside = {
            e.id for s, e in by_seq.items() if window.span.start_seq <= s <= window.span.end_seq
        }
        assert sum(1 for e in by_seq.values() if e.id in inside and e.author == "user") == 5
        record = HandoffRecord.model_validate(window.record)
        assert set(record.cited_ids()) <= inside  # every citation inside its window
        # The model saw this window's events only.
        transcript = summaries.transcripts[windows.index(window)]
        assert {line.split("]")[0][1:] for line in transcript.strip().splitlines()} == inside

    # The digest at idle summarises nothing new: one merged record of the whole thread.
    digest = await _digest(bot)
    assert digest.outcome == "posted", digest.problems
    assert len(summaries.transcripts) == 4
    [stored] = await database.digests.list_recent()
    merged = HandoffRecord.model_validate(stored.record)
    text = merged.all_text()
    assert all(f"A-{1000 + turn}" in text for turn in range(TURNS))
    assert set(stored.cited_event_ids) == {e.id for e in events}
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    assert "windows unavailable" not in json.dumps(post["blocks"])
    # The later windows saw the earlier goal as quoted context, never as transcript.
    assert "<<<THREAD_GOAL\n> " in summaries.requests[-1].contents[-1].text


@pytest.mark.parametrize("first_post_fails", [False, True], ids=["posted", "reposted"])
async def test_a_window_failing_twice_is_a_named_gap_linked_to_its_messages(
    slack: FakeSlackApi,
    start_bot: StartBot,
    database: Any,
    tmp_path: Path,
    first_post_fails: bool,
) -> None:
    summaries = TranscriptSummarizer(fail=("A-1012",))  # turn 12: the third window
    settings = _settings(tmp_path, slack, summary_mode="incremental")
    bot = await _bot(slack, start_bot, settings, summaries, database)
    session = await _converse(bot, slack)
    windows = await database.windows.windows(session.id)
    assert [w.status for w in windows] == ["passed", "passed", "gap", "passed"]
    gap = windows[2]
    assert gap.record is None and gap.attempts == 2
    assert any("A-1012" in p for p in gap.problems)

    summarised = len(summaries.transcripts)
    if first_post_fails:
        # Stored, then the post failed: the next pass re-posts the stored digest, gaps
        # named as the first post would have.
        slack.fail("chat.postMessage", times=10)
        assert await bot.digest_job().run_once() == []
        assert len(await database.digests.list_recent()) == 1
    digest = await _digest(bot)
    assert digest.outcome == "posted", digest.problems
    assert len(summaries.transcripts) == summarised  # the windows, each summarised once
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    blocks = json.dumps(post["blocks"], ensure_ascii=False)
    links = ThreadLinks("C1", ROOT, f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}")
    by_id = {e.id: e for e in session.events}
    # The gap's first message (turn 10's question) and last (the answer to turn 14).
    first, last = by_id[gap.span.start_id], by_id[gap.span.end_id]
    assert first.text == _message(10) and last.text == "Answer 14."
    expected = (
        f"1 of 4 windows unavailable: see <{links.link_for(first)}|{gap.span.start_id}>"
        f"–<{links.link_for(last)}|{gap.span.end_id}>"
    )
    assert expected in blocks
    # What the gap held is not in the record; the rest is.
    merged = HandoffRecord.model_validate((await database.digests.list_recent())[0].record)
    assert "A-1012" not in merged.all_text() and "A-1019" in merged.all_text()


@pytest.mark.parametrize("first_post_fails", [False, True], ids=["posted", "reposted"])
async def test_a_goodbye_without_values_costs_no_call_and_the_digest_links_it(
    slack: FakeSlackApi,
    start_bot: StartBot,
    database: Any,
    tmp_path: Path,
    first_post_fails: bool,
) -> None:
    summaries = TranscriptSummarizer()
    settings = _settings(tmp_path, slack, summary_mode="incremental")
    bot = await _bot(slack, start_bot, settings, summaries, database)
    await _converse(bot, slack)
    thanks, ts = "Thanks, that is all.", _ts(TURNS)
    # Another person: U1's twenty messages used up its per-user rate.
    slack.add_message("C1", ts=ts, text=thanks, user="U2", thread_ts=ROOT)
    await bot.send_event(channel_message(thanks, ts=ts, user="U2", thread_ts=ROOT))
    await wait_answers(slack, TURNS + 1)
    await bot.idle()
    await bot.services.runner.drain()
    session = await _session(bot)
    assert len(await database.windows.windows(session.id)) == 4

    if first_post_fails:
        slack.fail("chat.postMessage", times=10)
        assert await bot.digest_job().run_once() == []
    digest = await _digest(bot)
    assert digest.outcome == "posted", digest.problems
    assert len(summaries.transcripts) == 4  # the goodbye was never summarised
    assert len(await database.windows.windows(session.id)) == 4  # and is left open
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    blocks = json.dumps(post["blocks"], ensure_ascii=False)
    links = ThreadLinks("C1", ROOT, f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}")
    tail = [
        e for e in _conversation(session) if e.seq > (await _last_window_end(database, session))
    ]
    assert tail[0].text == thanks and len(tail) == 2
    expected = (
        f"The last messages, <{links.link_for(tail[0])}|{tail[0].id}>"
        f"–<{links.link_for(tail[-1])}|{tail[-1].id}>, hold no values or promises"
    )
    assert expected in blocks
    assert "windows unavailable" not in blocks


async def _last_window_end(database: Any, session: Any) -> int:
    return max(w.span.end_seq for w in await database.windows.windows(session.id))


async def test_forget_removes_the_windows_holding_a_users_events_and_the_digest_rebuilds(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, slack, summary_mode="incremental")
    summaries = TranscriptSummarizer()
    bot = await _bot(slack, start_bot, settings, summaries, database)
    session = await _converse(bot, slack, speakers={7: "U2"})  # in the second window
    before = await database.windows.windows(session.id)
    assert len(before) == 4 and "A-1007" in json.dumps(before[1].record)

    out = io.StringIO()
    assert await forget(settings, out, "U2") == 0
    after = await database.windows.windows(session.id)
    assert [w.span for w in after] == [before[0].span, before[2].span, before[3].span]
    assert re.search(r"windows +1\n", out.getvalue())

    digest = await _digest(bot)
    assert digest.outcome == "posted", digest.problems
    rebuilt = await database.windows.windows(session.id)
    assert len(rebuilt) == 4 and len(summaries.transcripts) == 5
    assert rebuilt[1].span.start_seq == before[1].span.start_seq
    assert rebuilt[1].closed_by == "digest" and "A-1007" not in json.dumps(rebuilt[1].record)
    merged = (await database.digests.list_recent())[0].record
    assert "A-1007" not in json.dumps(merged) and "A-1008" in json.dumps(merged)


async def test_summary_mode_whole_summarises_the_whole_thread_once_at_idle(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    summaries = TranscriptSummarizer()
    settings = _settings(tmp_path, slack, summary_mode="whole")
    bot = await _bot(slack, start_bot, settings, summaries, database)
    session = await _converse(bot, slack)
    assert await database.windows.windows(session.id) == []
    assert summaries.transcripts == []

    digest = await _digest(bot)
    assert digest.outcome == "posted", digest.problems
    [transcript] = summaries.transcripts
    assert "THREAD_GOAL" not in summaries.requests[0].contents[-1].text
    ids = {e.id for e in session.events}
    assert {line.split("]")[0][1:] for line in transcript.strip().splitlines()} == ids


class _RepliesSeen(TranscriptSummarizer):
    """Notes, at each summary request, how many replies Slack showed finished."""

    def __init__(self, slack: FakeSlackApi) -> None:
        super().__init__()
        self.slack = slack
        self.replies_seen: list[int] = []

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.replies_seen.append(len(answers(self.slack)))
        return await super().generate(request)


async def _until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_a_waiting_reply_goes_before_a_queued_window_summary(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    # One slot, as on the embedded model.
    settings = _settings(tmp_path, slack, summary_mode="incremental", max_concurrent_invocations=1)
    summaries = _RepliesSeen(slack)
    # Stands where compaction runs (first, outside the limit), held on the window's turn.
    hold_hooks = asyncio.Event()
    held = False

    async def compaction_stand_in(session: Any, invocation_id: str) -> None:
        if held:
            await hold_hooks.wait()

    bot = await _bot(
        slack, start_bot, settings, summaries, database, before_windows=(compaction_stand_in,)
    )
    for turn in range(INTERVAL - 1):
        await _turn(bot, slack, turn)
    held = True
    await _turn(bot, slack, INTERVAL - 1)  # closes the first window
    worker = bot.services.worker
    busy = asyncio.Event()

    async def other_work() -> None:
        await busy.wait()

    worker.run(other_work(), Priority.COMMAND)  # takes the one slot
    hold_hooks.set()
    await _until(lambda: worker.limit.waiting == 1)  # the window summary, queued

    other = "1700003000.000100"
    slack.add_message("C1", ts=other, text="A new question", user="U2")
    await bot.send_event(channel_message("A new question", ts=other, user="U2", mention=True))
    await _until(lambda: worker.limit.waiting == 2)  # the reply, queued after it
    busy.set()
    await wait_answers(slack, INTERVAL + 1)
    await bot.idle()
    await bot.services.runner.drain()

    # The reply went first: the window was summarised once it had been sent.
    assert summaries.replies_seen and summaries.replies_seen[0] == INTERVAL + 1
    session = await _session(bot)
    [window] = await database.windows.windows(session.id)
    assert window.status == "passed"


async def test_hand_offs_from_a_record_with_a_gap_carry_or_link_every_word(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    summaries = TranscriptSummarizer(fail=("A-1012",))  # turn 12: the third window
    settings = _settings(tmp_path, slack, summary_mode="incremental")
    bot = await _bot(slack, start_bot, settings, summaries, database)
    session = await _converse(bot, slack)
    gap = next(w for w in await database.windows.windows(session.id) if w.status == "gap")
    link = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
    links = ThreadLinks("C1", ROOT, link)
    by_id = {e.id: e for e in session.events}

    # To a person: the record, with the gap linked to its raw messages.
    # A colleague in the channel asks (U1 spent its message rate on the twenty turns).
    slack.members.setdefault("C1", ["U1"]).append("U7")
    await bot.send_command("/handoff", f"{link} <@U2|bob> please take over", user="U7")
    await bot.idle()
    [to_person] = [
        c
        for c in slack.calls_to("chat.postMessage")
        if c.get("channel") == "C1" and "handed this thread off" in c.get("text", "")
    ]
    blocks = json.dumps(to_person["blocks"], ensure_ascii=False)
    assert f"<{links.link_for(by_id[gap.span.start_id])}|{gap.span.start_id}>" in blocks
    assert "partial: 3 of 4 windows" in blocks

    # To an agent: the merged record, then the gap's own events, raw and fenced.
    await bot.send_command("/handoff", f"{link} billing_agent", user="U7")
    await bot.idle()
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    thread = await database.threads.get(key)
    assert thread.owner_agent == "billing_agent"
    fresh = await database.sessions.get_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )
    seed = fresh.events[0].text
    assert f"Window {gap.span.start_id}–{gap.span.end_id}, not summarised:" in seed
    assert _message(12) in seed  # the gap's words, A-1012 among them
    assert "A-1019" in seed.split("Events the record does not cover")[0]  # the record's
