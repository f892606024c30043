"""Which peer a connection counts against (`bot.slack.connection_guard.peer_of`)."""

from __future__ import annotations

import pytest

from bot.slack.connection_guard import peer_of


@pytest.mark.parametrize(
    ("peername", "peer"),
    [
        (("203.0.113.7", 44321), "203.0.113.7"),
        (("::ffff:203.0.113.7", 44321, 0, 0), "203.0.113.7"),
        # One host owns a whole IPv6 /64: every address in it is one peer.
        (("2001:db8:1:2:aaaa::1", 44321, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:ffff:ffff:ffff:fffe", 5, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:3::1", 5, 0, 0), "2001:db8:1:3::/64"),
        (("fe80::1%eth0", 5, 0, 2), "fe80::/64"),
        (None, ""),
        ("/run/bot.sock", ""),
        (("not an address", 1), ""),
    ],
)
def test_peer_of_groups_by_address_and_ipv6_prefix(peername: object, peer: str) -> None:
    assert peer_of(peername) == peer
