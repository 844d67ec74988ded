"""Archipelago's tool contract: the schemas kwrl's apps publish, and validation against them.

Every tool an app serves is one of Archipelago's (ARCH `mcp_servers/<app>/.../tools/*.py`, individual-
tool mode), under its exact name, with its exact published input schema. `archipelago_tools.json`
(beside this module) holds, for each of the 73 tools, the schema upstream's `tools/list` publishes
(`inputSchema`, after its `mcp_schema.flatten_schema`) and the pydantic schema flattening starts from
(`validationSchema`: unions, constraints and defaults intact). Provenance: Mercor-Intelligence/
archipelago at commit 1c3dcd4694b313020cd626699c9c7cc1c0a2fc58, Apache-2.0 (upstream's LICENSE is
`ARCHIPELAGO_LICENSE.txt` beside this module; `tests/fixtures/archipelago_schemas/` has how it was
produced). A test compares what the gateway lists with that fixture.

`serve(name, app)` serves a `WorldApp` (`kwrl.worlds.apps.base`) as app `name` of the app table:
each of its `@tool` methods is upstream's tool of that name. The arguments of a call are validated
against the validation schema (a pydantic model built from it on first call, so lax coercion such as
"5" -> 5 and every default are upstream's), then the method is called with them as keywords; for
a tool whose only parameter is an `input`/`request` envelope, with the envelope's fields. A bad call
is a tool error `Error calling tool '<tool>': Validation error: <loc>: <msg>; ...` (upstream's
ValidationErrorSanitizerMiddleware format, naming the tool as served).
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import keyword
from collections.abc import Callable
from importlib import resources
from typing import Annotated, Any, Literal, Union

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool, ToolResult
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model

from kwrl.tasks.apps import APPS
from kwrl.worlds.apps.base import WorldApp
from kwrl.worlds.client import envelope_key

# kwrl server name (the gateway's `<server>_` prefix) -> upstream server, from the one app table
# (kwrl.tasks.apps.APPS).
UPSTREAM_SERVER: dict[str, str] = {name: app.upstream for name, app in APPS.items()}


@functools.cache
def specs() -> dict[tuple[str, str], dict[str, Any]]:
    """(upstream server, tool name) -> {description, inputSchema, validationSchema}."""
    text = resources.files(__package__).joinpath("archipelago_tools.json").read_text("utf-8")
    return {(t["server"], t["name"]): t for t in json.loads(text)}


# --- JSON schema -> pydantic -------------------------------------------------------------------


def _constraints(s: dict[str, Any]) -> dict[str, Any]:
    names = {
        "minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt",
        "minLength": "min_length", "maxLength": "max_length", "pattern": "pattern",
        "minItems": "min_length", "maxItems": "max_length",
    }  # fmt: skip
    return {names[k]: v for k, v in s.items() if k in names}


def _type(s: dict[str, Any], hint: str) -> Any:
    """The Python type that validates like JSON schema fragment `s` does under pydantic."""
    if "anyOf" in s or "oneOf" in s:
        options = s.get("anyOf") or s["oneOf"]
        members = [_type(m, _member_name(m, f"{hint}{i}")) for i, m in enumerate(options)]
        t: Any = Union[tuple(members)] if len(members) > 1 else members[0]  # noqa: UP007 (runtime tuple)
        tag = _tag(options) if "oneOf" in s else None
        if tag is not None:  # pydantic writes a discriminated union as oneOf: validate it as one
            t = Annotated[t, Field(discriminator=tag)]
    elif "const" in s:
        t = Literal[s["const"]]
    elif "enum" in s:
        t = Literal[tuple(s["enum"])]
    else:
        kind = s.get("type")
        if kind == "string":
            t = str
        elif kind == "integer":
            t = int
        elif kind == "number":
            t = float
        elif kind == "boolean":
            t = bool
        elif kind == "null":
            t = type(None)
        elif kind == "array":
            items = s.get("items")
            t = (
                list[_type(items, f"{hint}Item")]
                if isinstance(items, dict) and items
                else list[Any]
            )
        elif kind == "object" or "properties" in s:
            if "properties" in s:
                t = _model(s, hint)
            elif isinstance(s.get("additionalProperties"), dict):
                t = dict[str, _type(s["additionalProperties"], f"{hint}Value")]
            else:
                t = dict[str, Any]
        else:
            t = Any
    bounds = _constraints(s)
    return Annotated[t, Field(**bounds)] if bounds else t


def _camel(key: str) -> str:
    """Model names in validation errors: `read_tab` + `input` -> `ReadTabInput`."""
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def _member_name(s: dict[str, Any], fallback: str) -> str:
    """A union member's model name: its `type` constant where it has one (names it in errors)."""
    const = ((s.get("properties") or {}).get("type") or {}).get("const")
    return str(const) if isinstance(const, str) else fallback


def _tag(options: list[dict[str, Any]]) -> str | None:
    """The property every member of a union fixes to a distinct constant, if there is one."""
    props = [o.get("properties") or {} for o in options]
    for key in props[0] if props else []:
        consts = [p.get(key, {}).get("const") for p in props]
        if all(isinstance(c, str) for c in consts) and len(set(consts)) == len(consts):
            return key
    return None


def _model(s: dict[str, Any], name: str) -> type[BaseModel]:
    required = set(s.get("required", []))
    fields: dict[str, Any] = {}
    for i, (key, sub) in enumerate((s.get("properties") or {}).items()):
        t = _type(sub, f"{name}{_camel(key)}")
        # the JSON name where Python allows it (a discriminator must name the field), else f<i>
        usable = key.isidentifier() and not keyword.iskeyword(key) and not key.startswith("_")
        field = key if usable and not hasattr(BaseModel, key) else f"f{i}"
        if key in required:
            fields[field] = (t, Field(alias=key))
        else:
            default = copy.deepcopy(sub.get("default"))
            fields[field] = (t, Field(default=default, alias=key))
    extra = "forbid" if s.get("additionalProperties") is False else "ignore"
    config = ConfigDict(extra=extra, populate_by_name=False, arbitrary_types_allowed=True)
    return create_model(name, __config__=config, **fields)


@functools.cache
def validation_model(server: str, name: str) -> type[BaseModel]:
    return _model(specs()[(server, name)]["validationSchema"], _camel(name))


def format_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(s) for s in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "Validation error: " + "; ".join(parts)


class ContractTool(Tool):
    """A tool with upstream's published schema, validated against upstream's pydantic schema."""

    _fn: Callable[..., Any] = PrivateAttr()
    _server: str = PrivateAttr()
    _upstream: str = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        spec = specs()[(self._server, self._upstream)]
        try:
            params = validation_model(self._server, self._upstream).model_validate(arguments or {})
        except ValidationError as e:
            raise ToolError(
                f"Error calling tool '{self.name}': {format_validation_error(e)}"
            ) from None
        kwargs = params.model_dump(by_alias=True)
        key = envelope_key(spec["validationSchema"])
        if key is not None:
            kwargs = kwargs[key]
        fn = self._fn
        if inspect.iscoroutinefunction(fn):
            result = await fn(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(lambda: fn(**kwargs))
        return self.convert_result(result)

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Any:  # keep private attrs
        new = super().model_copy(update=update, deep=deep)
        new._fn, new._server, new._upstream = self._fn, self._server, self._upstream
        return new


def serve(name: str, app: WorldApp) -> FastMCP:
    """The MCP server of `app` as app `name` of the table: each `@tool` method served as upstream's
    tool of its name, with upstream's published schema (KeyError for a name upstream lacks)."""
    server = APPS[name].upstream
    mcp = FastMCP(name)
    for upstream, fn in app.tools().items():
        spec = specs()[(server, upstream)]
        tool = ContractTool(
            name=upstream,
            description=spec["description"],
            parameters=copy.deepcopy(spec["inputSchema"]),
        )
        tool._fn, tool._server, tool._upstream = fn, server, upstream
        mcp.add_tool(tool)
    return mcp
