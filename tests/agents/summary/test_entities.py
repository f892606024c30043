"""Entity extraction: patterns, tool keys, sensitive values."""

from __future__ import annotations

from agents.summary.entities import Entity, EntityExtractor, mask_text, mentions, pattern
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import agent, refund_events, tool, user


def _values(entities: list[Entity]) -> dict[str, str]:
    return {e.value: e.type for e in entities}


def test_entities_refund_example() -> None:
    found = _values(EntityExtractor().extract(numbered(refund_events())))
    assert found["A-1001"] == "order_id"
    assert found["B-2040"] == "order_id"
    assert found["$12.50"] == "amount"


def test_entities_from_tool_keys_and_sensitive_values_masked() -> None:
    events = numbered(
        [
            user("351531510"),
            user("3941"),
            *tool(
                "bank_balance", {"AccountNumber": "351531510", "PIN": "3941"}, {"BankBalance": 3115}
            ),
        ]
    )
    entities = EntityExtractor().extract(events)
    by_value = {e.value: e for e in entities}
    assert by_value["351531510"].type == "account_id" and by_value["351531510"].high_value
    pin = by_value["3941"]
    assert pin.sensitive and not pin.high_value and pin.masked == "••••"
    assert by_value["3115"].type == "amount"
    assert mask_text("my pin is 3941", entities) == "my pin is ••••"


def test_entities_are_domain_configurable() -> None:
    extractor = EntityExtractor(patterns=[pattern("ticket", r"\bTCK\d{5}\b")], tool_keys={})
    found = extractor.extract(numbered([user("Ticket TCK12345 about A-1001")]))
    assert [(e.type, e.value) for e in found] == [("ticket", "TCK12345")]


def test_entities_mentions_compare_amounts_by_value() -> None:
    amount = Entity(type="amount", value="$1,200.00", event_ids=())
    assert mentions("refund of 1200 dollars", amount)
    assert not mentions("refund of 120", amount)
    order = Entity(type="order_id", value="A-1001", event_ids=())
    assert mentions("order a-1001 shipped", order) and not mentions("A-10011", order)


def test_entities_tool_results_count_only_through_result_keys() -> None:
    events = numbered([*tool("get_user", {"user_id": "mia_li_3668"}, {"email": "mia@example.com"})])
    found = _values(EntityExtractor().extract(events))
    assert "mia_li_3668" in found and "mia@example.com" not in found
    events = numbered([agent("Your email is mia@example.com"), *events])
    assert "mia@example.com" in _values(EntityExtractor().extract(events))


def test_calendar_dates_match_across_formats() -> None:
    from agents.summary.entities import Entity, mentions

    iso = Entity(type="date", value="2024-05-24", event_ids=())
    assert mentions("flights on May 24, 2024 were downgraded", iso)
    assert mentions("the 24th of May", iso) and mentions("on May 24", iso)
    assert not mentions("on May 25, 2024", iso)
    assert not mentions("on May 24, 2023", iso)
    written = Entity(type="date", value="May 24, 2024", event_ids=())
    assert mentions('{"date":"2024-05-24"}', written)
