"""`RateStore`: one count per user and window, told once past the limit, on both backends."""

from __future__ import annotations

from storage import Database


async def test_rates_count_per_window_and_tell_once(db: Database) -> None:
    taken = [await db.rates.take("U1", now=100.0 + n, window=60, limit=2) for n in range(4)]
    assert [(t.count, t.tell) for t in taken] == [(1, False), (2, False), (3, True), (4, False)]
    assert {t.window_end for t in taken} == {160.0}
    # Another user counts apart; the next window starts afresh and may tell again.
    assert (await db.rates.take("U2", now=101.0, window=60, limit=2)).count == 1
    fresh = [await db.rates.take("U1", now=160.0 + n, window=60, limit=1) for n in range(3)]
    assert [(t.count, t.tell, t.window_end) for t in fresh] == [
        (1, False, 220.0),
        (2, True, 220.0),
        (3, False, 220.0),
    ]


async def test_rates_forget_deletes_the_users_count(db: Database) -> None:
    await db.rates.take("U1", now=100.0, window=60, limit=2)
    await db.rates.take("U2", now=100.0, window=60, limit=2)
    report = await db.forget_user("U1")
    assert report.counts["user_rates"] == 1
    # U1 starts afresh; U2's count is untouched.
    assert (await db.rates.take("U1", now=101.0, window=60, limit=2)).count == 1
    assert (await db.rates.take("U2", now=101.0, window=60, limit=2)).count == 2
