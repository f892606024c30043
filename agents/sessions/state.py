"""Session state scopes: `app:` keys are shared by the app, `user:` keys by one user's
sessions, `temp:` keys last for one invocation, and unprefixed keys belong to the session."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"


def split_delta(
    delta: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split a state delta into (app, user, session) parts; `temp:` keys are dropped.

    App and user keys keep their prefix, so the stored maps read like the merged view.
    """
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(TEMP_PREFIX):
            continue
        if key.startswith(APP_PREFIX):
            app[key] = value
        elif key.startswith(USER_PREFIX):
            user[key] = value
        else:
            session[key] = value
    return app, user, session


def without_temp(delta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}


class State(MutableMapping[str, Any]):
    """The state an agent or tool sees during an invocation.

    Reads see the session's state plus this invocation's uncommitted writes. Writes
    go to `delta`, which the framework puts on the next event it yields.
    """

    def __init__(self, value: MutableMapping[str, Any], delta: dict[str, Any]) -> None:
        self._value = value
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            return self._delta[key]
        return self._value[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError("state keys cannot be deleted; set them to None instead")

    def __iter__(self) -> Iterator[str]:
        seen = set(self._delta)
        yield from self._delta
        for key in self._value:
            if key not in seen:
                yield key

    def __len__(self) -> int:
        return len(set(self._value) | set(self._delta))

    def __contains__(self, key: object) -> bool:
        return key in self._delta or key in self._value

    @property
    def delta(self) -> dict[str, Any]:
        return self._delta

    def to_dict(self) -> dict[str, Any]:
        return {**self._value, **self._delta}
