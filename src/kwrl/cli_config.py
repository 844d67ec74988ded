"""Flags generated from a config's fields: one typed config per verb, its fields are its flags.

`config_flags(Config)` decorates a typer command: every field of `Config` (nested models
recursively, as dotted names) becomes an option named like its TOML key (`--concurrency 4`,
`--agent.max_steps 20`, `--sandbox.allow_missing_limits true`), whose help is the field's
docstring and whose shown default is the field's, and the command receives the flags given as
one `overrides` dict of dotted keys, which `kwrl.config.apply_overrides` semantics turn into the
config (`build_config`). A field's default, name and text thus live once, in the model.

Values are parsed as TOML, else kept a string (`true`, `20`, `1e-6`, `"[1, 2]"`), and validated by
the model. A list field's flag repeats (`--agent.tools a --agent.tools b`), or takes one TOML
array; a dict field's flag repeats `key=value` (`--sandbox.kwargs app_name=x`). A bool field a
command names in `switches` is a `--key/--no-key` switch instead (`kwrl data synth --overwrite`,
`--no-control`), for verbs whose switches predate generated flags.

Non-obvious choice: every generated option is a string (or a list of strings) whose default is
None, so the command tells a flag given from one left out, and only given flags override the
config: a field left out keeps the model's default (and `exclude_unset` stays meaningful).
"""

from __future__ import annotations

import functools
import inspect
import keyword
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from rich.markup import escape

from kwrl.config import KwrlConfig, format_validation_error, parse_override, set_dotted
from kwrl.errors import ConfigError

OVERRIDES = "overrides"
"""The parameter of a decorated command that receives the given flags as {dotted key: value}."""


@dataclass(frozen=True)
class Flag:
    """One generated option: the field's dotted key and how it parses."""

    key: str
    param: str
    field: FieldInfo
    kind: str  # "value" | "list" | "dict"


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _kind(annotation: Any) -> str:
    """How a field's flag parses: one value, a repeated item (list) or repeated key=value (dict)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (UnionType, Union) and len(args) == 1:  # X | None
        return _kind(args[0])
    origin = get_origin(annotation) or annotation
    return "list" if origin in (list, set) else "dict" if origin is dict else "value"


def fields_of(cls: type[BaseModel], exclude: Collection[str] = (), prefix: str = "") -> list[Flag]:
    """Every leaf field of `cls` as a `Flag`, nested models flattened to dotted keys (a field's
    key is its TOML key: its alias where it has one, e.g. `from`)."""
    out: list[Flag] = []
    for name, field in cls.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        if key in exclude:
            continue
        if _is_model(field.annotation):
            out += fields_of(field.annotation, exclude, f"{key}.")  # type: ignore[arg-type]
            continue
        param = key.replace(".", "__")
        out.append(
            Flag(key, param + "_" * keyword.iskeyword(param), field, _kind(field.annotation))
        )
    return out


_REQUIRED = object()


def defaults_of(cls: type[BaseModel], instance: Any = None, prefix: str = "") -> dict[str, Any]:
    """{dotted key: default} of every leaf of `cls`, as its parents' defaults build them (a
    factory such as `LearnerConfig(lr=1e-5)` sets its own); a required field has none."""
    out: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        key = field.alias or name
        if instance is not None:
            value = getattr(instance, name)
        elif field.is_required():
            value = _REQUIRED
        else:
            value = field.get_default(call_default_factory=True, validated_data={})
        if _is_model(field.annotation):
            sub = value if isinstance(value, BaseModel) else None
            out.update(defaults_of(field.annotation, sub, f"{prefix}{key}."))  # type: ignore[arg-type]
        else:
            out[f"{prefix}{key}"] = value
    return out


def shown_default(value: Any) -> str | bool:
    """What `--help` shows as a default: TOML-like text, long text cut; False: none shown."""
    if value is _REQUIRED:
        return False
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "None"
    else:
        text = str(getattr(value, "value", value)).replace("\n", " ")
    return text if len(text) <= 40 else text[:37] + "..."


def _metavar(flag: Flag) -> str:
    if flag.kind == "dict":
        return "KEY=VALUE"
    ann = _leaf_type(flag)
    names = {bool: "BOOL", int: "INT", float: "FLOAT", str: "TEXT", Path: "PATH"}
    return names.get(ann, "VALUE") if isinstance(ann, type) else "VALUE"


def _parse(raw: str) -> Any:
    return parse_override(f"v={raw}")[1]


def _leaf_type(flag: Flag) -> Any:
    args = [a for a in get_args(flag.field.annotation) if a is not type(None)]
    ann = args[0] if len(args) == 1 else flag.field.annotation
    return (get_args(ann) or [str])[0] if flag.kind == "list" else ann


def _value(flag: Flag, raw: str | bool) -> Any:
    """A flag's text as its field takes it: text fields keep it (`--agent.exec_user 1000`), others
    parse it as TOML (`true`, `20`, `[1, 2]`), else keep it; a switch gives its bool."""
    if isinstance(raw, bool):
        return raw
    return raw if _leaf_type(flag) in (str, Path) else _parse(raw)


def collect(flags: list[Flag], given: Mapping[str, Any]) -> dict[str, Any]:
    """{dotted key: value} of the flags given (by parameter name), values parsed as TOML."""
    out: dict[str, Any] = {}
    for flag in flags:
        raw = given.get(flag.param)
        if raw is None or raw == []:
            continue
        if flag.kind == "value":
            out[flag.key] = _value(flag, raw)
        elif flag.kind == "list":
            array = _parse(raw[0]) if len(raw) == 1 else None
            out[flag.key] = array if isinstance(array, list) else [_value(flag, r) for r in raw]
        else:
            for item in raw:
                parts, value = parse_override(item)
                out[f"{flag.key}.{'.'.join(parts)}"] = value
    return out


def build_config[C: KwrlConfig](cls: type[C], overrides: Mapping[str, Any], source: str) -> C:
    """`cls` from dotted overrides (flags), validated; a bad value is a ConfigError naming the
    flag's key under `source` (e.g. `kwrl eval`)."""
    data: dict[str, Any] = {}
    for key, value in overrides.items():
        set_dotted(data, key, value)
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(source, e)) from None


def config_flags(
    cls: type[BaseModel],
    *,
    exclude: Collection[str] = (),
    short: Mapping[str, str] | None = None,
    panel: str | Callable[[str], str | None] | None = None,
    envvar: Mapping[str, str] | None = None,
    switches: Collection[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a typer command one option per field of `cls` (see the module doc).

    The command must take a parameter named `overrides`; it gets {dotted key: value} of the flags
    given. `exclude`: dotted keys left to the command
    (e.g. a positional argument); `short`: extra spellings, {key: "-c"}; `panel`: the `--help`
    section of each flag (a name, or a function of the key); `envvar`: {key: variable} read when
    the flag is not given; `switches`: keys of bool fields whose flag is `--key/--no-key`."""
    flags = fields_of(cls, exclude)
    by_key = {f.key: f for f in flags}
    for key in switches:
        if key not in by_key or by_key[key].field.annotation is not bool:
            raise TypeError(f"switches: {key} is not a bool field of {cls.__name__}")
    defaults = defaults_of(cls)

    def panel_of(key: str) -> str | None:
        return panel(key) if callable(panel) else panel

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        params = [p for p in sig.parameters.values() if p.name != OVERRIDES]
        hints = {p.name: p.annotation for p in params}
        for flag in flags:
            switch = flag.key in switches
            name = f"--{flag.key}/--no-{flag.key}" if switch else f"--{flag.key}"
            decls = [name, *([short[flag.key]] if short and flag.key in short else [])]
            option = typer.Option(
                *decls,
                help=escape(flag.field.description or ""),
                show_default=shown_default(defaults[flag.key]),
                metavar=None if switch else _metavar(flag),
                rich_help_panel=panel_of(flag.key),
                envvar=(envvar or {}).get(flag.key),
            )
            ann = (
                bool | None if switch else str | None if flag.kind == "value" else list[str] | None
            )
            hints[flag.param] = Annotated[ann, option]
            params.append(
                inspect.Parameter(
                    flag.param, inspect.Parameter.KEYWORD_ONLY, default=None,
                    annotation=hints[flag.param],
                )
            )  # fmt: skip

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            given = {f.param: kwargs.pop(f.param) for f in flags}
            return fn(*args, overrides=collect(flags, given), **kwargs)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.kwrl_config = (cls, frozenset(exclude))  # type: ignore[attr-defined]
        command.__annotations__ = {**hints, "return": sig.return_annotation}
        return command

    return decorate
