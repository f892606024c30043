"""How Slack deliveries are processed once, in order, across processes: delivery ids,
in-flight messages, process owners with heartbeats, and per-thread locks."""
