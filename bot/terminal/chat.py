"""`support-bot chat`: the product in a terminal, on the same runner, tree and storage.

Each line is a user message in a local "thread": a row of the same thread map Slack
threads use (team `local`, channel `terminal`), so the same session storage, compaction
and summary agent run, and a chat resumes after a restart. Replies are prefixed with the
agent that owns them (`[billing_agent] ...`), after the transfers that led there
(`support_supervisor → billing_agent`); a reply that used the knowledge base is followed
by the sections it cites (`Sources:`), as Slack shows them under the reply.

Local commands: `/summary` prints the validated handoff record as plain text (or the
validator's problems: never unchecked text); `/handoff <agent>` continues in a new
session that starts from that record, as the Slack command does; `/handoff <person>`
marks the thread handed off and prints the record; `/new`, `/threads`, `/open <n>`,
`/help`, `/quit`.

Piped (`printf 'my order A-1001 is late\\n/summary\\n' | support-bot chat`) it prints
nothing but replies and command results on stdout; logs go to stderr.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, TextIO

from agents.knowledge.reply_check import reply_sources, source_label
from agents.runner import Runner, reply_owner_name
from agents.sessions.session import Session
from bot.config import Settings
from bot.ops.knowledge import sync_at_start
from bot.threads.handoff import hand_to_agent, handoff_agents, handoff_text
from bot.threads.summaries import Summarizer, ThreadSummary, summarize_session
from bot.threads.transfers import transfer_line
from bot.threads.turn import ensure_thread, run_turn
from storage.database import Database
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

LOCAL_TEAM = "local"
LOCAL_CHANNEL = "terminal"
PROMPT = "you> "
MAX_LISTED = 20

HELP = """\
/summary           the validated handoff record of this thread
/handoff <agent>   continue with <agent> in a new session that starts from the record
                   (or, without a valid record, from the thread's own messages)
/handoff <person>  hand the thread to a person: mark it handed off, print the record
/new               start a new thread
/threads           list your local threads
/open <n>          switch to thread <n> of /threads
/quit              leave; the thread resumes next time"""


@dataclass
class ChatContext:
    """What the chat drives: settings, storage, the runner and the summary service."""

    settings: Settings
    db: Database
    runner: Runner
    summarizer: Summarizer


class TerminalChat:
    """One person's chat: the current local thread and the commands around it."""

    def __init__(self, ctx: ChatContext, *, user_id: str, out: TextIO, interactive: bool) -> None:
        self.ctx = ctx
        self.user_id = user_id
        self.out = out
        self.interactive = interactive
        self.record: ThreadRecord | None = None

    def say(self, text: str) -> None:
        """A reply or a command's result: always shown."""
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """Chatter for a person at a terminal (banners, hints): never in piped output."""
        if self.interactive:
            self.say(text)

    async def resume(self) -> None:
        """Continue the user's most recently active local thread, if there is one."""
        recent = await self.local_threads(limit=1)
        if recent:
            self.record = recent[0]
            self.note(f"Resuming thread {self.record.thread_ts}. /new starts another, /help.")
        else:
            self.note("New thread. /help lists the commands.")

    async def handle(self, line: str) -> bool:
        """Act on one input line; False when the chat should end."""
        text = line.strip()
        if not text:
            return True
        if not text.startswith("/"):
            await self.send(text)
            return True
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.say(HELP)
        elif name == "/summary":
            await self.summary()
        elif name == "/handoff":
            await self.handoff(arg)
        elif name == "/new":
            self.record = None
            self.say("Started a new thread.")
        elif name == "/threads":
            await self.list_threads()
        elif name == "/open":
            await self.open(arg)
        else:
            self.say(f"Unknown command {name}. Commands:\n{HELP}")
        return True

    async def send(self, text: str) -> None:
        """Run one user message through the runner and print the owning agent's reply."""
        record = await self._current_thread()
        outcome = await run_turn(
            self.ctx.runner,
            user_id=record.user_id,
            session_id=record.session_id,
            text=text,
            speaker=self.user_id,
        )
        if outcome.transfers:
            self.say(transfer_line(outcome.transfers))
        key = record.key
        if outcome.reply is None or not outcome.answered:
            failed = outcome.error
            await self.ctx.db.threads.flag(key, outcome.failure)
            author = failed.author if failed else (outcome.path or ["bot"])[-1]
            self.say(f"[{author}] {failed.text if failed else 'No reply.'}")
            return
        reply = outcome.reply
        # Named after its owner: a pipeline's step shows as its workflow (`reply_owner`).
        owner = reply_owner_name(self.ctx.runner.agent, reply.author)
        self.say(f"[{owner}] {reply.text}")
        sources = reply_sources(reply.custom_metadata)
        if sources:
            self.say(_sources_text(sources))
        await self.ctx.db.threads.touch(key, now=time.time(), owner_agent=owner)

    async def summary(self) -> None:
        loaded = await self._session()
        if loaded is None:
            return
        self.say(_summary_text(await self._summarize(loaded, "summary")))

    async def handoff(self, target: str) -> None:
        agents = handoff_agents(self.ctx.runner.agent)
        if not target:
            self.say(f"Usage: /handoff <agent|person>. Agents: {', '.join(agents)}.")
            return
        if target not in agents and self.ctx.runner.agent.find_agent(target) is not None:
            self.say(f"{target} can't own a thread; hand off to one of: {', '.join(agents)}.")
            return
        loaded = await self._session()
        if loaded is None:
            return
        assert self.record is not None
        summary = await self._summarize(loaded, "handoff")
        key = self.record.key
        if target in agents:
            # A failed summary hands off the thread's own messages, never an empty start.
            text = handoff_text(summary, thread_link=None, note="")
            await hand_to_agent(self.ctx.db, self.record, loaded, target, text)
            self.record = await self.ctx.db.threads.get(key)
            self.say(f"Handed off to {target}, in a new session that starts from:")
            if not summary.ok:
                self.say(text)
                return
        else:
            await self.ctx.db.threads.set_status(key, "handed_off")
            self.say(f"Handed off to {target}.")
        self.say(_summary_text(summary))

    async def list_threads(self) -> None:
        rows = await self.local_threads(limit=MAX_LISTED)
        if not rows:
            self.say("No threads yet.")
            return
        for number, row in enumerate(rows, start=1):
            current = "*" if self.record and row.thread_ts == self.record.thread_ts else " "
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.last_activity_at))
            flag = f"  flagged: {row.attention_reason}" if row.needs_attention else ""
            self.say(
                f"{current}{number:>3}  {row.thread_ts}  {when}  {row.status:<10}  "
                f"{row.owner_agent or '-'}{flag}"
            )

    async def open(self, arg: str) -> None:
        rows = await self.local_threads(limit=MAX_LISTED)
        chosen = next((r for r in rows if r.thread_ts == arg), None)
        if chosen is None and arg.isdigit() and 1 <= int(arg) <= len(rows):
            chosen = rows[int(arg) - 1]
        if chosen is None:
            self.say(f"No thread {arg!r}; /threads lists them.")
            return
        self.record = chosen
        self.say(f"Switched to thread {chosen.thread_ts}.")

    async def local_threads(self, *, limit: int) -> list[ThreadRecord]:
        """This user's local threads, most recently active first."""
        return await self.ctx.db.threads.for_user(
            team_id=LOCAL_TEAM, channel_id=LOCAL_CHANNEL, user_id=self.user_id, limit=limit
        )

    async def _current_thread(self) -> ThreadRecord:
        """The thread the next line goes to, mapped and active (a new one after /new)."""
        # Typing into a handed-off thread brings it back to the bot, as a mention does.
        if self.record is None:
            key = ThreadKey(
                team_id=LOCAL_TEAM, channel_id=LOCAL_CHANNEL, thread_ts=f"{time.time():.6f}"
            )
        else:
            key = self.record.key
        self.record = await ensure_thread(
            self.ctx.db,
            key,
            self.record,
            new_session_id=f"local-{key.thread_ts}",
            app_name=self.ctx.settings.app_name,
            user_id=self.user_id,
        )
        return self.record

    async def _session(self) -> Session | None:
        """The current thread's whole session, or None (after saying why)."""
        session = None
        if self.record is not None:
            session = await self.ctx.db.sessions.of_thread(self.record)
        if session is None or not session.events:
            self.say("Nothing to summarise yet: this thread has no messages.")
            return None
        return session

    async def _summarize(self, session: Session, surface: str) -> ThreadSummary:
        return await summarize_session(
            self.ctx.summarizer, session, surface=surface, deliveries=self.ctx.db.summary_deliveries
        )


def _sources_text(sources: list[dict[str, Any]]) -> str:
    """The sections a reply cites, one a line, each with its URL when it has one."""
    lines = ["Sources:"]
    for source in sources:
        url = source.get("url")
        lines.append(f"  - {source_label(source)}" + (f" <{url}>" if url else ""))
    return "\n".join(lines)


def _summary_text(summary: ThreadSummary) -> str:
    if summary.ok:
        return summary.plain
    listed = "\n".join(f"- {p}" for p in summary.problems)
    return f"No validated summary: the summary failed validation.\n{listed}"


async def run_chat(
    settings: Settings,
    *,
    user_id: str,
    interactive: bool,
    out: TextIO,
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Open storage and the models, then read lines until `/quit` or end of input."""
    import asyncio

    from agents.models.litellm_model import preload_litellm
    from bot.models import open_models
    from bot.terminal.lines import LineReader
    from bot.wiring import build_runner, build_summarizer
    from storage.database import Database
    from storage.errors import StorageError

    # litellm takes seconds to import: pay it while the person reads the prompt and types,
    # not on the first reply.
    started = time.perf_counter()
    preload = asyncio.create_task(preload_litellm())

    def preloaded(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is None:
            seconds = round(time.perf_counter() - started, 2)
            log.info("litellm preloaded", extra={"seconds": seconds})

    preload.add_done_callback(preloaded)
    db = await Database.open(settings.database_url)
    try:
        await sync_at_start(settings, db)
        async with open_models(settings, stderr=stderr) as models:
            ctx = ChatContext(
                settings=settings,
                db=db,
                runner=build_runner(settings, db, models),
                summarizer=build_summarizer(settings, db, models),
            )
            chat = TerminalChat(ctx, user_id=user_id, out=out, interactive=interactive)
            chat.note(f"support-bot chat on {models.label}, as {user_id}.")
            await chat.resume()
            log.info("chat ready", extra={"interactive": interactive})
            reader = LineReader(prompt=PROMPT, interactive=interactive, stdin=stdin)
            while (line := await reader.read()) is not None:
                try:
                    if not await chat.handle(line):
                        break
                except StorageError as exc:
                    log.error("chat turn failed: %s", exc)
                    chat.say(f"[error] {exc}")
            # Compaction runs after each reply; let the last one finish before closing.
            await ctx.runner.drain()
    finally:
        if not preload.done():
            preload.cancel()
        await db.close()
    return 0
