"""FunctionTool: expose a Python function (sync or async) to the model."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import ConfigDict, ValidationError, create_model

from agents.context import ToolContext
from agents.models.base import ToolDeclaration
from agents.tools.base_tool import BaseTool, ToolError


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and per-argument descriptions."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    arg_indent: int | None = None
    current: str | None = None
    for raw in inspect.cleandoc(doc).splitlines():
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if re.fullmatch(r"(Args|Arguments|Parameters):", line):
            section, arg_indent, current = "args", None, None
        elif re.fullmatch(r"[A-Z][a-z]+:", line):
            section = "other"
        elif section == "summary":
            if line:
                summary.append(line)
        elif section == "args" and line:
            match = re.match(r"(\w+)\s*(?:\([^)]*\))?:\s*(.*)", line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1)
                args[current] = match.group(2)
            elif current is not None:
                args[current] = f"{args[current]} {line}".strip()
    return " ".join(summary), args


class FunctionTool(BaseTool):
    """Wraps a function; its JSON schema comes from the signature and docstring.

    A parameter annotated `ToolContext` (or named `tool_context`) receives the context
    and is hidden from the model. Arguments are validated before the call; a dict result
    is returned as is, anything else as `{"result": value}`.
    """

    def __init__(self, func: Callable[..., Any], *, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__
        summary, arg_docs = _parse_docstring(func.__doc__ or "")
        self.description = summary
        hints = get_type_hints(func)
        fields: dict[str, Any] = {}
        self._context_param: str | None = None
        for pname, param in inspect.signature(func).parameters.items():
            annotation = hints.get(pname, Any)
            if annotation is ToolContext or pname == "tool_context":
                self._context_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        self._args_model = create_model(  # type: ignore[call-overload]
            f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = self._args_model.model_json_schema()
        schema.pop("title", None)
        schema.pop("additionalProperties", None)
        for pname, prop in schema.get("properties", {}).items():
            prop.pop("title", None)
            if pname in arg_docs:
                prop["description"] = arg_docs[pname]
        schema.setdefault("properties", {})
        self._parameters = schema

    def declaration(self) -> ToolDeclaration:
        return ToolDeclaration(
            name=self.name, description=self.description, parameters=self._parameters
        )

    async def run(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            validated = self._args_model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from exc
        kwargs = {k: getattr(validated, k) for k in type(validated).model_fields}
        if self._context_param:
            kwargs[self._context_param] = tool_context
        result = self.func(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result
