"""The hostile-input scenario at full size: 10,000 fuzzed, signed Slack payloads (the
suite runs 1,500) and 1,000 bad signatures, through the real HTTP app.

    .venv/bin/python bench/fuzz.py [--examples 10000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=10_000)
    args = parser.parse_args()
    env = {
        **os.environ,
        "FUZZ_EXAMPLES": str(args.examples),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    start = time.monotonic()
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/reliability/test_hostile_input.py"],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    verdict = "no 500s, no crash, nothing malformed stored" if code == 0 else "FAILED"
    sent = f"{args.examples:,} signed payloads + 1,000 bad signatures"
    print(f"fuzz: {sent} in {elapsed:.0f}s: {verdict}")
    sys.exit(code)
