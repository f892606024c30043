"""The garbage collector as a served bot sets it (`bot.garbage_collector`), checked in a
child process: freezing the heap or moving thresholds here would change this suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Settings

PROBE = """
import gc, json, sys
from agents.metrics import REGISTRY
from bot.garbage_collector import tune
before = gc.get_threshold()
tune(int(sys.argv[1]))
page = REGISTRY.exposition().decode()
print(json.dumps({
    "before": before,
    "threshold": gc.get_threshold(),
    "frozen": gc.get_freeze_count(),
    "page": page,
}))
"""


def probe(threshold: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(threshold)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": ""},
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_serving_freezes_the_start_up_heap_and_raises_the_young_threshold() -> None:
    result = probe(50_000)
    assert result["threshold"] == [50_000, 10, 10]
    assert isinstance(result["frozen"], int) and result["frozen"] > 10_000
    page = str(result["page"])
    assert "support_bot_gc_young_threshold 50000.0" in page
    assert f"support_bot_gc_frozen_objects {float(result['frozen'])}" in page
    assert 'python_gc_collections_total{generation="0"}' in page


def test_a_threshold_of_0_keeps_pythons_defaults() -> None:
    result = probe(0)
    assert result["threshold"] == result["before"]
    assert result["frozen"] == 0
    assert "support_bot_gc_young_threshold 700.0" in str(result["page"])


def test_the_default_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GC_YOUNG_THRESHOLD", raising=False)
    assert Settings(_env_file=None).gc_young_threshold == 50_000
    monkeypatch.setenv("GC_YOUNG_THRESHOLD", "-1")
    with pytest.raises(ValueError):
        Settings(_env_file=None)
