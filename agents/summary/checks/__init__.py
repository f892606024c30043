"""Checks of a handoff record against its transcript: the validator and the rules it applies
(coverage and recall, user claims, the goal). They only report `Problem`s, never repair."""
