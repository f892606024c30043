"""FunctionTool: schema from signature and docstring; sync and async functions."""

from __future__ import annotations

import pytest

from agents import FunctionTool, ToolContext
from agents.tools import ToolError


def lookup_order(
    order_id: str, include_items: bool = False, tool_context: ToolContext | None = None
) -> dict:  # type: ignore[type-arg]
    """Look up an order's status.

    Args:
        order_id: The order id, such as A-1001.
        include_items: Whether to list the items,
            one per line.
    """
    return {"order_id": order_id, "status": "shipped"}


async def refund(amount: float) -> str:
    """Refund an amount in dollars."""
    return f"refunded {amount:.2f}"


def test_function_tool_schema_from_signature_and_docstring() -> None:
    decl = FunctionTool(lookup_order).declaration()
    assert decl.name == "lookup_order"
    assert decl.description == "Look up an order's status."
    props = decl.parameters["properties"]
    assert set(props) == {"order_id", "include_items"}
    assert props["order_id"] == {"type": "string", "description": "The order id, such as A-1001."}
    assert props["include_items"]["description"] == "Whether to list the items, one per line."
    assert decl.parameters["required"] == ["order_id"]


async def test_function_tool_runs_async_and_validates_args() -> None:
    tool = FunctionTool(refund)
    assert await tool.run(args={"amount": "12.5"}, tool_context=None) == "refunded 12.50"  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="amount"):
        await tool.run(args={"amount": "lots"}, tool_context=None)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="extra"):
        await tool.run(args={"amount": 1, "extra": 2}, tool_context=None)  # type: ignore[arg-type]
