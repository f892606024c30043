"""litellm takes seconds to import, so nothing imports it until a model is called."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["agents.models.litellm_model", "agents"])
def test_lazy_import_module_does_not_import_litellm(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "from agents.models.litellm_model import LiteLlmModel\n"
        "LiteLlmModel('openai/test', api_key='k')\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
