"""The word keys a knowledge index stores: pinned to their version."""

from __future__ import annotations

from agents.words import KEYS_VERSION, keyed

PROBE = (
    "Refunds were charged twice; consolidation eligibility, 0x80070005 INV-2291 49.00 USD: "
    "I'm running the studies!"
)


def test_the_keys_are_pinned_to_their_version() -> None:
    """Every stored index was written with the keys of its `KEYS_VERSION`. A change of
    the keys under the same version would leave old indexes matching no query; if this
    fails, raise `KEYS_VERSION` and pin the new keys here."""
    assert (KEYS_VERSION, keyed(PROBE)) == (
        1,
        "refund were charg twice consol eligib 0x80070005 inv 2291 49 00 usd i m runn the study",
    )
