"""A tool's result as the model receives it: a JSON object, and as reply text when the
tool's result is the agent's answer (`skip_summarization`)."""

from __future__ import annotations

import json
from typing import Any


def json_result(name: str, result: Any) -> dict[str, Any]:
    """`result` of tool `name` as a JSON object (a non-dict wrapped as `{"result": ...}`),
    or an error naming the tool when it is not JSON."""
    value = result if isinstance(result, dict) else {"result": result}
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return {"error": f"tool {name} returned a value that is not JSON: {type(result).__name__}"}


def result_text(result: dict[str, Any]) -> str:
    """`result` as reply text: a lone string result as it is, anything else as JSON."""
    if set(result) == {"result"} and isinstance(result["result"], str):
        return result["result"]
    return json.dumps(result, ensure_ascii=False)
