"""Python's cyclic garbage collector, set for a long-running server.

CPython frees almost every object by reference counting; the cyclic collector only finds
reference cycles. With its defaults (a young collection every 700 net new container
objects) it ran about 19 young, 2 middle and 0.13 full collections per second in the bot
under `bench/slack_load.py` at 100 messages a second, and every one of them walks every
object it covers: a full collection walked the whole start-up heap (modules, the agent
tree, Bolt, pydantic's schemas) and held the event loop for up to 121 ms, so acks and
replies in flight waited. The cycles it found were few, about 8 objects per message.

Once the process has started, `tune` does two things:
- `gc.freeze()`: everything start-up built lives as long as the process, so it moves to a
  permanent generation no collection walks again;
- a young-generation threshold of `GC_YOUNG_THRESHOLD` net new container objects instead
  of 700, so collections are rarer (each walks the objects of the replies in flight, so
  a higher threshold means fewer but longer pauses; see the README's benchmark table).

`GC_YOUNG_THRESHOLD=0` keeps Python's defaults (no freeze). Either way `/metrics` shows
the collector: `python_gc_collections_total{generation}` and the objects it collected
(prometheus_client's own collector), `support_bot_gc_young_threshold` and
`support_bot_gc_frozen_objects`.
"""

from __future__ import annotations

import gc
import logging

from prometheus_client.gc_collector import GCCollector

from agents.metrics import REGISTRY

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_gc_young_threshold",
    "gauge",
    "Net new container objects between two young garbage collections (GC_YOUNG_THRESHOLD)",
)
REGISTRY.describe(
    "support_bot_gc_frozen_objects",
    "gauge",
    "Objects of the start-up heap moved out of the garbage collector's reach (gc.freeze)",
)


def tune(young_threshold: int) -> None:
    """Freeze the start-up heap and set the young threshold (0: Python's defaults), and
    show the collector on `/metrics`."""
    if young_threshold > 0:
        gc.collect()  # start-up's own garbage goes first, not into the permanent generation
        gc.freeze()
        # The middle and old thresholds stay as they are (Python's: a middle collection
        # every 10 young ones; a full one also waits until the survivors since the last
        # outnumber a quarter of the long-lived objects).
        gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
    try:
        GCCollector(registry=REGISTRY.collectors)
    except ValueError:
        pass  # served before in this process: its collector is registered already
    REGISTRY.set("support_bot_gc_young_threshold", gc.get_threshold()[0])
    REGISTRY.set("support_bot_gc_frozen_objects", gc.get_freeze_count())
    log.info(
        "garbage collector set",
        extra={"frozen_objects": gc.get_freeze_count(), "young_threshold": gc.get_threshold()[0]},
    )
