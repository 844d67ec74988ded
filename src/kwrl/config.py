"""Typed configs: pydantic models, TOML files, dotted `key=value` overrides.

Every config class derives from `KwrlConfig`; a docstring under each field documents it (and
becomes `--help` text). `load_config` reads a TOML file, applies overrides such as
`trainer.lr=1e-6`, and validates; `save_config` writes the resolved config beside a run's outputs.
This module imports no heavy dependency, so configs parse without torch.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kwrl.errors import ConfigError
from kwrl.io import write_text


class KwrlConfig(BaseModel):
    """Base for every kwrl config: unknown keys are errors, field docstrings are descriptions."""

    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True, validate_assignment=True
    )


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b.c=value` -> (["a", "b", "c"], value); the value is parsed as TOML, else kept a string."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value, e.g. trainer.lr=1e-6")
    key, raw = item.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"override {item!r}: empty key")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return parts, value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        parts, value = parse_override(item)
        node = data
        for p in parts[:-1]:
            child = node.setdefault(p, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {item!r}: {p!r} is not a table")
            node = child
        node[parts[-1]] = value
    return data


def load_config[C: KwrlConfig](cls: type[C], path: Path | None, overrides: list[str] = ()) -> C:  # type: ignore[assignment]
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise ConfigError(f"{path}: no such config file") from e
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: invalid TOML: {e}") from e
    apply_overrides(data, list(overrides))
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(path or "<overrides>", e)) from e


def format_validation_error(source: Path | str, err: ValidationError) -> str:
    lines = [f"{source}: invalid config"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "<root>"
        lines.append(f"  {loc}: {e['msg']}")
    return "\n".join(lines)


def to_toml(data: dict[str, Any]) -> str:
    """Render a config dict as TOML (scalars and lists first, then tables)."""
    out: list[str] = []

    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(scalar(x) for x in v) + "]"
        return json.dumps(str(v))

    def emit(prefix: str, d: dict[str, Any]) -> None:
        tables = {k: v for k, v in d.items() if isinstance(v, dict)}
        plain = {k: v for k, v in d.items() if not isinstance(v, dict) and v is not None}
        if prefix and plain:
            out.append(f"[{prefix}]")
        for k, v in plain.items():
            out.append(f"{k} = {scalar(v)}")
        if plain:
            out.append("")
        for k, v in tables.items():
            emit(f"{prefix}.{k}" if prefix else k, v)

    emit("", data)
    return "\n".join(out)


def save_config(cfg: KwrlConfig, path: Path) -> None:
    write_text(path, to_toml(cfg.model_dump(mode="json")))
