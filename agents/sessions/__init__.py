"""Sessions: the session record, its scoped state, and the `SessionService` contract."""
