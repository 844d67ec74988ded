"""Spec strings pick a policy client from the registry; configs parse from TOML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwrl.config import load_config
from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import SamplingParams
from kwrl.llm.engine_client import EngineClient, LiveEngineClient
from kwrl.llm.engines import live_engine, register_engine, unregister_engine
from kwrl.llm.litellm_chat import LiteLLMChatClient
from kwrl.llm.openai_completions import OpenAICompletionsClient
from kwrl.llm.policy import POLICIES, PolicyConfig, build_policy, lend_engine, split_spec


def test_specs_name_their_kind() -> None:
    assert split_spec("http://127.0.0.1:8000/v1#smollm2") == (
        "completions",
        "http://127.0.0.1:8000/v1#smollm2",
    )
    assert split_spec("litellm:gemini/gemini-2.5-flash") == ("litellm", "gemini/gemini-2.5-flash")
    assert split_spec("engine:smollm2-135m") == ("engine", "smollm2-135m")
    for bad in ("smollm2", "engine:", "ftp://x"):
        with pytest.raises(ConfigError, match=r"policy\.model"):
            split_spec(bad)
    assert set(POLICIES) == {"completions", "litellm", "engine", "vllm", "live"}


async def test_a_url_spec_builds_a_completions_client() -> None:
    client = build_policy(PolicyConfig(model="http://127.0.0.1:8000/v1/#smollm2", timeout_s=5))
    assert isinstance(client, OpenAICompletionsClient) and client.supports_tokens
    assert client.base_url == "http://127.0.0.1:8000/v1" and client.model == "smollm2"
    await client.aclose()


def test_litellm_specs_read_their_key_from_the_named_env_var(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = PolicyConfig(model="litellm:gemini/gemini-2.5-flash", api_key_env="KWRL_TEST_KEY")
    monkeypatch.delenv("KWRL_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="KWRL_TEST_KEY"):
        build_policy(cfg)
    monkeypatch.setenv("KWRL_TEST_KEY", "sk-x")
    client = build_policy(cfg)
    assert isinstance(client, LiteLLMChatClient) and not client.supports_tokens
    assert (client.model, client.api_key) == ("gemini/gemini-2.5-flash", "sk-x")


def test_engine_specs_share_one_engine_per_config(engine: Any, smollm2_dir: Path) -> None:
    cfg = PolicyConfig(model=f"engine:{smollm2_dir}", engine={"threads": 1})
    a, b = build_policy(cfg), build_policy(cfg)
    assert isinstance(a, EngineClient) and isinstance(b, EngineClient)
    assert a.engine is b.engine and a.supports_tokens


async def test_a_live_handle_reaches_the_registered_engine_and_a_missing_one_is_an_error(
    engine: Any,
) -> None:
    spec = register_engine("test-trainer", engine)
    try:
        client = build_policy(PolicyConfig(model=spec))
        assert isinstance(client, LiveEngineClient) and client.engine is engine
        out = await client.complete([1, 2, 3], SamplingParams(max_tokens=2, temperature=0.0))
        assert 1 <= len(out.token_ids) <= 2  # sampled by the registered engine, none loaded
        with pytest.raises(ConfigError, match="another engine"):
            register_engine("test-trainer", object())
    finally:
        unregister_engine("test-trainer")
    with pytest.raises(PolicyError, match="no engine is registered under 'test-trainer'"):
        build_policy(PolicyConfig(model=spec))


def test_a_run_lends_its_in_process_engine_by_handle_and_nothing_else(tiny_model_dir: Path) -> None:
    cfg = PolicyConfig(model=f"engine:{tiny_model_dir}", engine={"threads": 1})
    assert lend_engine(cfg, "test-eval") == "live:test-eval"
    try:
        # the engine the spec names, loaded once: the handle and the spec reach the same one
        assert live_engine("test-eval") is build_policy(cfg).engine  # type: ignore[attr-defined]
        for other in ("http://127.0.0.1:9/v1#m", "litellm:gemini/gemini-2.5-flash", "live:x"):
            assert lend_engine(PolicyConfig(model=other), "test-other") is None
        with pytest.raises(PolicyError):
            live_engine("test-other")
    finally:
        unregister_engine("test-eval")


def test_unknown_kinds_and_fields_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown; choose one of"):
        build_policy(PolicyConfig(model="engine:x", kind="vllm-direct"))
    path = tmp_path / "policy.toml"
    path.write_text('model = "litellm:openai/gpt-4o"\n[engine]\nthreads = 1\n')
    cfg = load_config(PolicyConfig, path, ["timeout_s=5"])
    assert (cfg.engine.threads, cfg.timeout_s) == (1, 5.0)
    # sampling is the agent's (AgentConfig.temperature ...), never a second, unread policy setting
    path.write_text('model = "litellm:openai/gpt-4o"\n[sampling]\ntemperature = 0.5\n')
    with pytest.raises(ConfigError, match="sampling"):
        load_config(PolicyConfig, path)
    path.write_text('model = "x"\ntemprature = 1\n')
    with pytest.raises(ConfigError, match="temprature"):
        load_config(PolicyConfig, path)
