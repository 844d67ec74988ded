"""Building a policy client from config: `PolicyConfig`, the `POLICIES` registry, `build_policy`.

A policy is named by one spec string (the grammar judges share, `kwrl.llm.spec`), so a CLI flag or
a TOML line picks any of them:

- `http://127.0.0.1:8000/v1#smollm2`: an OpenAI-compatible server (vLLM, `kwrl serve`), TITO
  through `/v1/completions` (`completions`); the part after `#` is the served model name
  (`default` when absent; `kwrl serve` answers to any name, vLLM wants its served name).
- `litellm:gemini/gemini-2.5-flash`: any litellm model, chat only (`litellm`).
- `engine:smollm2-135m`: an in-process engine over a packaged name, a folder or a hub id
  (`engine`). Engines are shared per process and engine config: building the same policy twice
  loads the model once.
- `vllm:smollm2-135m`: vLLM in this process on a GPU (`vllm`, `kwrl.llm.engines.vllm`; needs
  the `gpu` extra), shared per process like `engine`.
- `live:HANDLE`: the engine registered under HANDLE in this process (`live`,
  `kwrl.llm.engines.register_engine`): how a run hands one engine to its trials' agents (the
  trainer its own; `kwrl eval` and smoke the one an `engine:`/`vllm:` spec names, `lend_engine`).
  Nothing is loaded; an unregistered handle is an error.

`kind` overrides what the spec's shape says. API keys are never in configs: `api_key_env` names
the environment variable that holds one. Sampling parameters are not a policy setting: each call
takes its own (`SamplingParams`), and the agent sets them from `kwrl.agent.config.AgentConfig`
(temperature, top_p, max_tokens_per_turn, seed), so a temperature has one home.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError
from kwrl.llm.base import PolicyClient
from kwrl.llm.engine_client import EngineClient, LiveEngineClient, VLLMClient
from kwrl.llm.engines.local import EngineConfig
from kwrl.llm.engines.registry import register_engine
from kwrl.llm.engines.vllm import VLLMConfig
from kwrl.llm.litellm_chat import LiteLLMChatClient
from kwrl.llm.openai_completions import OpenAICompletionsClient
from kwrl.llm.spec import split_spec as _split


class PolicySettings(KwrlConfig):
    """How to reach and run a policy, whichever it is: every `PolicyConfig` setting but the spec
    (a run's `policy` settings; the spec is the run's model, `for_model`)."""

    kind: str | None = None
    """Client kind from the registry (`completions`, `litellm`, `engine`, `vllm`); default: from
    `model`."""
    api_base: str | None = None
    """Base URL for litellm providers that need one (e.g. an OpenAI-compatible chat endpoint)."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself never goes in a config)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one policy call may take before it fails."""
    retries: int = Field(default=2, ge=0)
    """Retries after a transport error or a 5xx answer."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """In-process engine settings (kind `engine`); its `model` is replaced by the spec's."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """In-process vLLM settings (kind `vllm`)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for litellm calls (provider-specific options)."""

    def for_model(self, model: str) -> PolicyConfig:
        """These settings for the policy spec `model`."""
        return PolicyConfig.model_validate({**self.model_dump(exclude_unset=True), "model": model})


class PolicyConfig(PolicySettings):
    """Which policy samples the agent's turns, and how to reach it."""

    model: str = "engine:smollm2-135m"
    """Policy spec: `http(s)://HOST:PORT/v1#NAME`, `litellm:PROVIDER/MODEL`, `engine:MODEL` or
    `vllm:MODEL`."""

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"policy.api_key_env: environment variable {self.api_key_env} is not set"
            )
        return key


def split_spec(spec: str) -> tuple[str, str]:
    """`spec` -> (kind, target): the registry key and what that client is built on (`kwrl.llm.spec`)."""
    return _split(spec, kinds=POLICIES, url_kind="completions", field="policy.model")


POLICIES: dict[str, type[PolicyClient]] = {
    "completions": OpenAICompletionsClient,
    "litellm": LiteLLMChatClient,
    "engine": EngineClient,
    "vllm": VLLMClient,
    "live": LiveEngineClient,
}
"""Policy kinds by name; `build_policy` looks `kind` up here.

To add one: a `PolicyClient` subclass in its own file beside `base.py` with `chat(...)` and a
`from_spec(target, cfg)` classmethod, registered here under its kind; `KIND:TARGET` then names it
in every flag and config (`kwrl.llm.spec`). What else changes with it:
- its settings, if any, as a sub-config field of `PolicyConfig` (as `engine` and `vllm` are);
- for RL (token in, token out): `supports_tokens = True`, `complete(prompt_ids, ...)` returning
  token ids and logprobs, `context_window()` where the policy can tell, and `tokenizer()` where
  it samples in this process;
- as the trainer's rollout engine (weights pushed each step): a `rollout_engine` value in
  `kwrl.train.local.config` and its weight push in the trainer, as `vllm` has;
- README's model specs and docs/contracts.md ("Policy").
Tests: tests/unit/llm/test_policy.py (specs name their kind; unknown kinds are config errors),
tests/unit/llm/test_clients.py for token clients. docs/extending.md lists every extension point."""


def build_policy(cfg: PolicyConfig) -> PolicyClient:
    """The client `cfg` names (see the module doc for spec strings)."""
    kind, target = split_spec(cfg.model)
    if cfg.kind is not None:
        kind = cfg.kind
    cls = POLICIES.get(kind)
    if cls is None:
        raise ConfigError(f"policy.kind {kind!r}: unknown; choose one of {sorted(POLICIES)}")
    return cls.from_spec(target, cfg)


def lend_engine(cfg: PolicyConfig, handle: str) -> str | None:
    """Load the in-process engine `cfg` names (a kind whose client samples from an engine in this
    process: `engine`, `vllm`) as `build_policy` would, and register it under `handle`; returns
    the spec `live:HANDLE` that reaches it. None, and nothing loaded, for any other policy (a
    server, litellm, or already `live:`). How a run that owns its trials (`kwrl eval`) hands them
    one engine by name, as the trainer hands its own; the caller unregisters the handle."""
    kind, target = split_spec(cfg.model)
    kind = cfg.kind or kind
    cls = POLICIES.get(kind)
    if cls is None or cls is LiveEngineClient or not issubclass(cls, EngineClient):
        return None
    client = cls.from_spec(target, cfg)
    assert isinstance(client, EngineClient)
    return register_engine(handle, client.engine)
