"""Judge specs pick a judge from the registry in the policy grammar; old forms warn and still work;
`judge_env` carries a judge into a trial's verifier without writing its key."""

from __future__ import annotations

import warnings
from typing import ClassVar

import pytest

from kwrl.errors import ConfigError
from kwrl.grading.judges import (
    JUDGES,
    Judge,
    JudgeConfig,
    build_judge,
    judge_env,
    split_judge_spec,
)
from kwrl.grading.judges.litellm import LiteLLMJudge
from kwrl.grading.judges.openai_http import OpenAIHTTPJudge


def test_judge_specs_are_policy_specs() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current forms never warn
        assert split_judge_spec("http://127.0.0.1:8000/v1#qwen") == (
            "openai",
            "http://127.0.0.1:8000/v1#qwen",
        )
        assert split_judge_spec("litellm:gemini/gemini-2.5-flash") == (
            "litellm",
            "gemini/gemini-2.5-flash",
        )
        judge = build_judge(JudgeConfig(model="https://proxy.example/v1/#Qwen/Qwen3-8B"))
    assert isinstance(judge, OpenAIHTTPJudge)
    assert (judge.base_url, judge.model) == ("https://proxy.example/v1", "Qwen/Qwen3-8B")
    assert judge.spec == "https://proxy.example/v1#Qwen/Qwen3-8B"
    assert build_judge(JudgeConfig(model="http://h:1/v1")).model == "default"  # type: ignore[attr-defined]
    assert isinstance(build_judge(JudgeConfig()), LiteLLMJudge)
    assert set(JUDGES) == {"openai", "litellm"}


@pytest.mark.parametrize(
    "bad",
    [
        "engine:smollm2-135m", "litellm:", "openai:localhost#m", "http://#m", "",
        "openai:http://h:8000/v1#m", "gemini/gemini-2.5-flash", "ollama/llama3:8b",  # 0.1.0's
    ],
)  # fmt: skip
def test_bad_judge_specs_name_the_grammar(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"judge.*(http\(s\)://HOST:PORT/v1#NAME|nothing after)"):
        build_judge(JudgeConfig(model=bad))


def test_judge_env_passes_settings_and_key_templates_not_keys() -> None:
    host = {
        "OPENAI_API_KEY": "sk-secret",
        "GEMINI_API_KEY": "g-secret",
        "KWRL_JUDGE_MAX_RETRIES": "1",
        "KWRL_JUDGE_TIMEOUT_S": "5",
        "KWRL_JUDGE_CACHE": "/host/cache",
        "KWRL_JUDGE_CACHE_DIR": "/host/cache",
        "KWRL_JUDGE_API_KEY": "not-a-setting",
        "HOME": "/root",
    }
    assert judge_env("http://127.0.0.1:9/v1#m", host) == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#m",
        "KWRL_JUDGE_MAX_RETRIES": "1",
        "KWRL_JUDGE_TIMEOUT_S": "5",
        "OPENAI_API_KEY": "${OPENAI_API_KEY}",
    }
    assert judge_env("litellm:gemini/gemini-2.5-flash", {**host, "GOOGLE_API_KEY": ""}) == {
        "KWRL_JUDGE": "litellm:gemini/gemini-2.5-flash",
        "KWRL_JUDGE_MAX_RETRIES": "1",
        "KWRL_JUDGE_TIMEOUT_S": "5",
        "GEMINI_API_KEY": "${GEMINI_API_KEY}",
    }
    named = {"KWRL_JUDGE_API_KEY_ENV": "MY_KEY", "MY_KEY": "k", "OPENAI_API_KEY": "sk"}
    assert judge_env("http://h:1/v1#m", named) == {
        "KWRL_JUDGE": "http://h:1/v1#m", "KWRL_JUDGE_API_KEY_ENV": "MY_KEY", "MY_KEY": "${MY_KEY}",
    }  # fmt: skip
    with pytest.raises(ConfigError):
        judge_env("engine:x", {})


def test_litellm_judges_name_their_provider_key() -> None:
    assert LiteLLMJudge.key_env("gemini/gemini-2.5-flash") == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert LiteLLMJudge.key_env("anthropic/claude") == ("ANTHROPIC_API_KEY",)
    assert LiteLLMJudge.key_env("gpt-4o") == ("OPENAI_API_KEY",)


async def test_a_registered_judge_is_built_by_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    class EchoJudge(Judge):
        kind: ClassVar[str] = "echo"

        async def _complete(self, messages: list[dict[str, str]]) -> str | None:
            return '{"rationale": "' + self.target + '", "is_criteria_true": true}'

    monkeypatch.setitem(JUDGES, "echo", EchoJudge)
    async with build_judge(JudgeConfig(model="echo:hello")) as judge:
        verdict, cached = await judge.verdict("system", "user")
    assert verdict.rationale == "hello" and verdict.is_criteria_true and not cached
    assert judge.spec == "echo:hello" and judge.calls == 1
