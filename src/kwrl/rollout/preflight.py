"""Checks of a run's model, tokenizer, policy endpoint and judge endpoint before its first trial.

A mistake in what the user typed must cost one line and seconds, not a trial's minutes and a
traceback inside its files. `preflight(cfg)` runs where a verb has built its `RolloutConfig`
(`kwrl trial run`, `kwrl rollout`, `kwrl eval`) and raises `ConfigError` naming the flag:

- a model (`--model engine:NAME`, `vllm:NAME`) or tokenizer (`--tokenizer`, `KWRL_TOKENIZER`, or a
  URL spec's served name `...#NAME`) is found offline (`kwrl.llm.packaged.check_model`): a packaged
  name, a folder, or a hub id in the local Hugging Face cache. An unknown name without an
  organisation (`nosuch-model`) is a typo'd packaged name: the known ones are listed and no
  network is touched. Only an `ORG/NAME` missing from the cache is asked of the hub, once.
- a policy endpoint (`--model http://HOST:PORT/v1#NAME`, a litellm `api_base`) and a judge endpoint
  (`--judge http://...`, `KWRL_JUDGE_API_BASE`) are probed once (`probe_endpoint`): a refused
  connection, an unknown host or a timeout stops the run with the endpoint and its error. Any
  HTTP answer, even an error status, means the server is there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kwrl.errors import ConfigError

if TYPE_CHECKING:
    from kwrl.rollout.runner import RolloutConfig

PROBE_TIMEOUT_S = 3.0
"""Seconds one endpoint probe may take (connect and answer)."""


def probe_endpoint(url: str, field: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """GET `url`/models once; ConfigError naming `field`, the endpoint and the error when no HTTP
    answer comes (refused, unknown host, timeout). Any status is an answer."""
    import httpx

    try:
        with httpx.Client(timeout=timeout_s) as client:
            client.get(url.rstrip("/") + "/models")
    except httpx.HTTPError as e:
        reason = str(e).splitlines()[0] if str(e) else ""
        raise ConfigError(
            f"{field}: endpoint {url} cannot be reached: {type(e).__name__}"
            + (f": {reason}" if reason else "")
        ) from e


def preflight(cfg: RolloutConfig) -> None:
    """Check `cfg`'s policy model, tokenizer and endpoints before any trial (see the module doc)."""
    from kwrl.agent.config import ENV_TOKENIZER
    from kwrl.grading.judges import ENV_SPEC
    from kwrl.llm.packaged import check_model
    from kwrl.llm.policy import split_spec
    from kwrl.llm.spec import DEFAULT_SERVED_NAME, is_url, split_url
    from kwrl.rollout.settings import KWRL_AGENT

    own = cfg.agent_settings
    if cfg.agent == KWRL_AGENT and cfg.model and own is not None:
        kind, target = split_spec(cfg.model)
        pcfg = own.policy.for_model(cfg.model)
        kind = pcfg.kind or kind
        served: str | None = None
        if kind in ("engine", "vllm"):
            check_model(target, "--model")
        elif kind == "completions":
            url, served = split_url(target, field="--model")
            probe_endpoint(url, "--model")
        elif kind == "litellm" and pcfg.api_base:
            probe_endpoint(pcfg.api_base, "--policy.api_base")
        tokenizer = own.tokenizer or os.environ.get(ENV_TOKENIZER)
        if tokenizer:
            check_model(tokenizer, "--tokenizer", tokenizer=True)
        elif served == DEFAULT_SERVED_NAME:
            raise ConfigError(
                f"--model {cfg.model!r}: name the tokenizer the server samples with (--tokenizer "
                f"NAME or env {ENV_TOKENIZER}), or end the spec in #NAME"
            )
        elif served is not None:
            check_model(
                served, f"--model {cfg.model!r}: its served name (the tokenizer)", tokenizer=True
            )
    judge = cfg.verifier_env.get(ENV_SPEC)
    if judge and is_url(judge):
        probe_endpoint(judge.partition("#")[0], "--judge")
    api_base = cfg.verifier_env.get(f"{ENV_SPEC}_API_BASE")
    if judge and api_base:
        probe_endpoint(api_base, f"{ENV_SPEC}_API_BASE")
