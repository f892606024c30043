"""`/metrics` reports what a Slack session did: invocations, model use by agent, transfers,
compactions, summaries, digests and dropped duplicate deliveries."""

from __future__ import annotations

from typing import Any

from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.events import FunctionCall, Part, Usage
from agents.models.base import LlmResponse, ModelError
from agents.models.scripted import ScriptedModel, json_text
from agents.summary.service import SummaryService
from bot.digests.job import DigestJob
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message
from tests.e2e.replies import wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


def answer(text: str | None = None, *, call: FunctionCall | None = None) -> LlmResponse:
    part = Part(function_call=call) if call else Part(text=text)
    return LlmResponse(
        parts=(part,), usage=Usage(prompt_tokens=100, completion_tokens=20, cost=0.5)
    )


def samples(page: str) -> dict[str, float]:
    values = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


async def test_metrics_report_a_slack_session(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    transfer = FunctionCall(id="c1", name="transfer_to_agent", args={"agent_name": "billing_agent"})
    model = ScriptedModel(
        [answer(call=transfer), answer("Which card was charged?"), answer("Noted, thanks.")]
    )
    record = {
        "goal": "Sort out a double charge",
        "facts": [{"text": "Charged twice for order A-1001", "sources": ["e1"]}],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    summarizer = SummaryService(ScriptedModel([json_text(record)]))
    bot = await start_bot(support_tree(model), summarizer=summarizer)
    # The first compaction fails, the second (after the next turn) is written.
    compactor = Compactor(
        database.sessions,
        EventsCompactionConfig(
            summarizer=LlmEventSummarizer(
                ScriptedModel([ModelError("summariser down"), "Double charge on A-1001."])
            ),
            compaction_interval=1,
            overlap_size=0,
        ),
    )
    bot.services.runner.after_invocation.append(compactor)

    root = "1700000100.000100"
    first = channel_message("I was charged twice for order A-1001", ts=root, mention=True)
    await bot.send_event(first, event_id="EvA")
    await bot.send_event(first, event_id="EvA", retry_num=1)  # Slack's retry: dropped
    await wait_answers(slack)
    await bot.idle()
    await bot.services.runner.drain()
    await bot.send_event(channel_message("the visa card", ts="1700000101.000100", thread_ts=root))
    await wait_answers(slack, 2)
    await bot.idle()
    await bot.services.runner.drain()

    job = DigestJob(
        db=database, summarizer=summarizer, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted"

    assert bot.http is not None
    async with bot.http.get(f"{bot.url}/metrics") as response:
        assert response.status == 200
        page = await response.text()
    got = samples(page)
    # Two turns in the thread, and the summary agent's own run for the digest.
    assert got["support_bot_invocations_total"] == 3
    assert got['support_bot_model_calls_total{agent="support_supervisor"}'] == 1
    assert got['support_bot_model_calls_total{agent="billing_agent"}'] == 2
    assert got['support_bot_model_tokens_total{agent="billing_agent",kind="prompt"}'] == 200
    assert got['support_bot_model_tokens_total{agent="billing_agent",kind="completion"}'] == 40
    assert got['support_bot_model_cost_usd_total{agent="billing_agent"}'] == 1.0
    assert got['support_bot_transfers_total{from="support_supervisor",to="billing_agent"}'] == 1
    assert got["support_bot_compaction_runs_total"] == 1
    assert got["support_bot_compaction_failures_total"] == 1
    assert got['support_bot_summaries_total{outcome="passed_first_attempt"}'] == 1
    assert got["support_bot_summary_first_attempt_pass_ratio"] == 1.0
    assert got["support_bot_summary_fallback_ratio"] == 0.0
    assert got['support_bot_summary_deliveries_total{outcome="validated",surface="digest"}'] == 1
    assert got['support_bot_summary_delivered_fallback_ratio{surface="digest"}'] == 0.0
    assert got["support_bot_digests_posted_total"] == 1
    assert sum(v for k, v in got.items() if "duplicate_deliveries" in k) == 1


async def test_metrics_and_stats_count_every_decide_first_call_and_the_agent_tools(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    from agents import AgentTool, LlmAgent
    from bot.ops.stats import registry_rows, stats_rows

    def used(text: str) -> LlmResponse:
        return LlmResponse(
            parts=(Part(text=text),),
            usage=Usage(prompt_tokens=100, completion_tokens=10, cost=0.25),
        )

    model = ScriptedModel(
        [
            used(json_text("policy_checker")),  # the supervisor decides to consult
            used(json_text({"request": "Refund a duplicate 49.00 USD charge on A-1001?"})),
            used("ALLOWED: duplicate charges are refunded."),  # policy_checker, an AgentTool
            used(json_text("support_supervisor")),  # decides again: answers
            used("The duplicate 49.00 USD charge on A-1001 will be refunded."),
        ],
        decide_first=True,
    )
    policy = LlmAgent(
        name="policy_checker", description="Says whether a refund is allowed.", model=model
    )
    root = LlmAgent(
        name="support_supervisor",
        description="Front door.",
        instruction="Consult policy_checker before refunds.",
        model=model,
        tools=[AgentTool(policy)],
    )
    bot = await start_bot(root)
    root_ts = "1700000200.000100"
    await bot.send_event(
        channel_message("Refund my duplicate charge on A-1001?", ts=root_ts, mention=True)
    )
    [reply] = await wait_answers(slack)
    assert reply["text"].endswith("The duplicate 49.00 USD charge on A-1001 will be refunded.")
    await bot.idle()
    model.assert_complete()

    assert bot.http is not None
    async with bot.http.get(f"{bot.url}/metrics") as response:
        got = samples(await response.text())
    # Two decide-first steps of two calls each; the consulted agent's one call, under its
    # own name, with its tokens and cost.
    assert got['support_bot_model_calls_total{agent="support_supervisor"}'] == 4
    assert got['support_bot_model_calls_total{agent="policy_checker"}'] == 1
    assert got['support_bot_model_tokens_total{agent="policy_checker",kind="prompt"}'] == 100
    assert got['support_bot_model_cost_usd_total{agent="policy_checker"}'] == 0.25
    assert got['support_bot_model_cost_usd_total{agent="support_supervisor"}'] == 1.0
    # `support-bot stats` reads the same from what is stored: every call is counted.
    stats = await database.stats.collect()
    rows = dict(stats_rows(stats))
    assert rows["model calls [support_supervisor]"] == "4 calls, 400+40 tokens, $1.000000"
    assert rows["model calls [policy_checker]"] == "1 calls, 100+10 tokens, $0.250000"
    assert sum(u.calls for u in stats.usage.values()) == len(model.requests) == 5
    page = dict(registry_rows(await (await bot.http.get(f"{bot.url}/metrics")).text()))
    assert page['support_bot_model_calls_total{agent="policy_checker"}'] == "1"
