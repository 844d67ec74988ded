"""Typed configs: pydantic models, TOML files, dotted `key=value` overrides.

Every config class derives from `KwrlConfig`; a docstring under each field documents it (and
becomes the `--help` text of its flag: `kwrl.cli_config`). `load_config` reads a TOML file,
applies overrides such as `trainer.lr=1e-6` and dotted values (flags), and validates;
`save_config` writes the resolved config beside a run's outputs.
This module imports no heavy dependency, so configs parse without torch.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import tomli_w
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from kwrl.errors import ConfigError
from kwrl.io import write_text


class KwrlConfig(BaseModel):
    """Base for every kwrl config: unknown keys are errors, field docstrings are descriptions."""

    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True, validate_assignment=True
    )


class OutputConfig(KwrlConfig):
    """A config whose verb writes an output dir (`out`), claimed by `kwrl.io.claim_output`."""

    overwrite: bool = False
    """Write into a non-empty output dir: replaces only what kwrl wrote there, keeps the rest."""


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt](?:i?b)?|b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """`20GiB`, `500MB`, `1048576` -> bytes (KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000);
    a ValueError for anything else."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size like 20GiB, 500MB or 1048576")
    number, unit = float(m.group(1)), (m.group(2) or "").lower()
    base = 1024 if "i" in unit else 1000
    scale = 1 if unit in ("", "b") else base ** ("kmgt".index(unit[0]) + 1)
    return int(number * scale)


ByteSize = Annotated[int, BeforeValidator(lambda v: parse_size(v) if isinstance(v, str) else v)]
"""A number of bytes, also given as a size text (`20GiB`, `500MB`: `parse_size`)."""


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


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set dotted `key` (`agent.max_steps`) to `value` in nested dict `data`."""
    node = data
    *head, last = key.split(".")
    for part in head:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{key}: {part!r} is not a table")
        node = child
    node[last] = value


def load_config[C: KwrlConfig](
    cls: type[C],
    path: Path | None,
    overrides: list[str] = (),  # type: ignore[assignment]
    values: Mapping[str, Any] | None = None,
) -> C:
    """`cls` from a TOML file (None: defaults), then `key=value` overrides, then `values` (dotted
    key -> value, e.g. the flags `kwrl.cli_config` generated); a bad file or value is a ConfigError
    naming the file and the field."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise ConfigError(f"{path}: no such config file") from e
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: invalid TOML: {e}") from e
    apply_overrides(data, list(overrides))
    for key, value in (values or {}).items():
        set_dotted(data, key, value)
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
    """Render plain data (a JSON-mode dump) as TOML with tomli_w. TOML has no null: a None
    anywhere is a ConfigError naming its key, never dropped silently (`save_config` decides which
    Nones a config may leave out)."""
    _refuse_none(data, "")
    return tomli_w.dumps(data)


def _refuse_none(value: Any, where: str) -> None:
    if value is None:
        raise ConfigError(f"{where or '<root>'}: None cannot be written to TOML")
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_none(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_none(v, f"{where}[{i}]")


def _without_defaulted_none(cfg: BaseModel, data: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in data.items():
        field = type(cfg).model_fields.get(name)
        sub = getattr(cfg, name, None)
        if value is None and field is not None:
            if field.get_default(call_default_factory=True) is not None:
                raise ConfigError(
                    f"{where}{name}: None cannot be written to TOML and is not the field's default"
                )
            continue
        if isinstance(sub, BaseModel) and isinstance(value, dict):
            value = _without_defaulted_none(sub, value, f"{where}{name}.")
        out[name] = value
    return out


def save_config(cfg: KwrlConfig, path: Path) -> None:
    """Write `cfg` resolved as TOML, so that `load_config(type(cfg), path) == cfg`.

    TOML has no null, so the rule for None is: a field whose value is None is left out, and
    loading gives it back from the default, which must be None too. A None elsewhere (a field
    whose default is not None, an item of a list or dict field) cannot round-trip and is a
    ConfigError naming the field; a config loaded from TOML never holds one.
    """
    try:
        text = to_toml(_without_defaulted_none(cfg, cfg.model_dump(mode="json"), ""))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e
    write_text(path, text)
