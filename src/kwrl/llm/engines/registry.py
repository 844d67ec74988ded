"""The engines of this process: loaded once per settings (`load_engine`), lent by name (`register_engine`).

Loading a model takes seconds to minutes and its memory is the process's largest, so an engine
is loaded once per (kind, model, settings) and every caller that names the same ones shares it:
each trial's agent, `kwrl serve`, the trainer that pushes weights into it. A run that owns an
engine lends it to its trials by a handle instead (`register_engine(handle, engine)` ->
`live:HANDLE`, `kwrl.llm.spec.live_spec`): the trainer its own, `kwrl eval` the one its
`engine:`/`vllm:` spec names (`kwrl.llm.policy.lend_engine`). A handle never loads anything; an
unregistered one is a `PolicyError`.

Non-obvious choice: the members' modules are imported when a member is loaded, so this module
(and the policy registry over it) imports without torch or vLLM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from kwrl import progress
from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.engines.base import SamplingEngine
from kwrl.llm.spec import live_spec

if TYPE_CHECKING:
    from kwrl.llm.engines.local import Engine, EngineConfig
    from kwrl.llm.engines.vllm import VLLMConfig, VLLMEngine


def _load_local(model: str, cfg: Any) -> SamplingEngine:
    from kwrl.llm.engines.local import Engine

    return Engine.from_config(cfg.model_copy(update={"model": model}))


def _load_vllm(model: str, cfg: Any) -> SamplingEngine:
    from kwrl.llm.engines.vllm import VLLMEngine

    return VLLMEngine(model, cfg)


ENGINES: dict[str, Callable[[str, Any], SamplingEngine]] = {
    "engine": _load_local,
    "vllm": _load_vllm,
}
"""Engine kinds by name -> a loader `(model, settings) -> SamplingEngine`; the kind is also the
policy kind (`engine:MODEL`, `vllm:MODEL`) and the `PolicyConfig` field holding its settings
(`EngineConfig`, `VLLMConfig`).

To add one: a class implementing `SamplingEngine` (`base.py`) in its own file beside
`local.py`, with a settings model (a `KwrlConfig`) and a loader here, importing that file inside
the loader (no heavy import at this module's import). What else changes with it:
- `PolicyConfig` (`kwrl.llm.policy`): a field named like the kind holding its settings, and an
  `EngineClient` subclass with `kind = "<kind>"` in `POLICIES`, so `KIND:MODEL` names it;
- as the trainer's rollout engine: a `rollout_engine` value in `kwrl.train.local.config`;
- docs/contracts.md ("Policy", "Engine") and docs/extending.md ("A policy client").
Tests: tests/unit/llm/test_engines.py (the protocol, the shared cache and handles)."""

_LOADED: dict[str, SamplingEngine] = {}
_LOAD_LOCK = threading.Lock()  # held while a model loads: two callers never load it twice
_LIVE: dict[str, SamplingEngine] = {}
_LIVE_LOCK = threading.Lock()


def load_engine(kind: str, model: str, settings: KwrlConfig) -> SamplingEngine:
    """The `kind` engine over `model` (a packaged name, a folder or a hub id) with `settings`
    (that kind's config; a `model` field in it is replaced by `model`), loaded on first use and
    shared by every later call with the same three in this process."""
    loader = ENGINES.get(kind)
    if loader is None:
        raise ConfigError(f"engine kind {kind!r}: unknown; choose one of {sorted(ENGINES)}")
    key = f"{kind}\n{model}\n{settings.model_dump_json(exclude={'model'})}"
    with _LOAD_LOCK:
        if key not in _LOADED:
            with progress.step(f"loading model {model} ({kind})"):
                _LOADED[key] = loader(model, settings)
        return _LOADED[key]


def shared_engine(cfg: EngineConfig) -> Engine:
    """The in-process engine `cfg` names, one per distinct config in this process
    (`load_engine("engine", cfg.model, cfg)`)."""
    return cast("Engine", load_engine("engine", cfg.model, cfg))


def shared_vllm_engine(model: str, cfg: VLLMConfig) -> VLLMEngine:
    """One vLLM engine per (model, config) in this process: the trainer and every trial's agent
    sample from (and the trainer pushes weights into) the same one."""
    return cast("VLLMEngine", load_engine("vllm", model, cfg))


def register_engine(handle: str, engine: SamplingEngine) -> str:
    """Make `engine` the policy `live:HANDLE` in this process, the way a trainer hands the engine
    it pushes weights into to its trials' agents; returns that spec. A handle holds one engine:
    registering another under it is an error."""
    with _LIVE_LOCK:
        if _LIVE.setdefault(handle, engine) is not engine:
            raise ConfigError(f"engine handle {handle!r}: another engine is registered under it")
    return live_spec(handle)


def unregister_engine(handle: str) -> None:
    """Forget `handle` (the engine itself stays loaded while anyone holds it)."""
    with _LIVE_LOCK:
        _LIVE.pop(handle, None)


def live_engine(handle: str) -> SamplingEngine:
    """The engine registered under `handle`; none is a `PolicyError` (never a second model)."""
    with _LIVE_LOCK:
        engine = _LIVE.get(handle)
        known = sorted(_LIVE)
    if engine is None:
        raise PolicyError(
            f"policy {live_spec(handle)}: no engine is registered under {handle!r} in this process "
            f"(registered: {', '.join(known) or 'none'}; kwrl.llm.engines.register_engine)"
        )
    return engine
