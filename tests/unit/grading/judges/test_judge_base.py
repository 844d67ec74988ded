"""The judge base (verdict contract, retries, cache, pacing) through the OpenAI-compatible HTTP judge,
against a real server on loopback (the one faked seam)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from grading_testkit import FakeJudge

from kwrl.errors import ConfigError, JudgeError
from kwrl.grading.evidence import Artifact
from kwrl.grading.judges import (
    ContextOverflowError,
    JudgeConfig,
    JudgeTimeoutError,
    RefusedError,
    build_judge,
    build_prompt,
    parse_verdict,
)
from kwrl.grading.judges.base import client_error


def config(fake: FakeJudge, **kw: object) -> JudgeConfig:
    base: dict[str, object] = {"model": fake.spec, "backoff_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0,
                               "requests_per_minute": None}  # fmt: skip
    return JudgeConfig.model_validate({**base, **kw})


def prompt(
    answer: str = "The total is 42.", criterion: str = "The answer states 'total is 42'"
) -> tuple[str, str]:
    art = Artifact(
        1, "file", "created", "/out/report.docx", "Quarterly report\n| Revenue | 42 |", ".docx"
    )
    return build_prompt(task="Compute the total of the Q3 sheet.", answer=answer, criterion=criterion,
                        scope="both", artifacts=[art], max_artifact_chars=10_000)  # fmt: skip


async def test_prompt_holds_task_answer_artifacts_and_criterion(fake_judge: FakeJudge) -> None:
    system, user = prompt()
    async with build_judge(config(fake_judge)) as judge:
        verdict, cached = await judge.verdict(system, user)
    assert verdict.is_criteria_true and not cached
    [req] = fake_judge.requests
    assert req["path"] == "/v1/chat/completions"
    body = req["body"]
    assert body["model"] == "fake-judge"
    assert body["response_format"]["type"] == "json_schema"
    sys_msg, user_msg = (m["content"] for m in body["messages"])
    assert "agent's claims are not evidence" in sys_msg and "Hedging fails" in sys_msg
    assert "Compute the total of the Q3 sheet." in user_msg
    assert "<FINAL_ANSWER>\nThe total is 42.\n</FINAL_ANSWER>" in user_msg
    assert '<ARTIFACT id="1" kind="file" change="created" path="/out/report.docx">' in user_msg
    assert "| Revenue | 42 |" in user_msg
    assert "<CRITERION>\nThe answer states 'total is 42'\n</CRITERION>" in user_msg


async def test_a_false_verdict_parses(fake_judge: FakeJudge) -> None:
    async with build_judge(config(fake_judge)) as judge:
        verdict, _ = await judge.verdict(*prompt(answer="The total is 41."))
    assert not verdict.is_criteria_true and verdict.rationale == "scripted: not met"


@pytest.mark.parametrize("fault", [429, 500, 503, "malformed", "wrong_schema", "hang"])
async def test_transient_faults_are_retried_then_succeed(
    fake_judge: FakeJudge, fault: int | str
) -> None:
    fake_judge.faults.extend([fault, fault])
    async with build_judge(config(fake_judge, timeout_s=0.5)) as judge:
        verdict, _ = await judge.verdict(*prompt())
    assert verdict.is_criteria_true
    assert judge.calls == 3 and len(fake_judge.requests) == 3


async def test_persistent_failure_raises_judge_error(fake_judge: FakeJudge) -> None:
    fake_judge.faults.extend([500] * 10)
    async with build_judge(config(fake_judge, max_retries=3)) as judge:
        with pytest.raises(JudgeError, match=r"after 4 attempts.*HTTP 500"):
            await judge.verdict(*prompt())
    assert len(fake_judge.requests) == 4


async def test_timeouts_on_every_attempt_are_their_own_error(fake_judge: FakeJudge) -> None:
    fake_judge.faults.extend(["hang"] * 3)
    async with build_judge(config(fake_judge, max_retries=2, timeout_s=0.2)) as judge:
        with pytest.raises(JudgeTimeoutError, match=r"on any of 3 attempts \(timeout\)"):
            await judge.verdict(*prompt())
    # a timeout among other failures is a plain JudgeError; a probe makes one attempt
    fake_judge.faults.extend(["hang", 500, "hang", "hang"])
    async with build_judge(config(fake_judge, max_retries=2, timeout_s=0.2)) as judge:
        with pytest.raises(JudgeError, match=r"after 3 attempts.*timeout") as info:
            await judge.verdict(*prompt())
        assert type(info.value) is JudgeError
        with pytest.raises(JudgeTimeoutError, match=r"on any of 1 attempts"):
            await judge.verdict(*prompt(), retries=False)
    assert len(fake_judge.requests) == 3 + 3 + 1


def test_the_agents_share_is_what_the_judge_reads_in_half_its_timeout() -> None:
    assert JudgeConfig().agent_chars == 300_000  # 5,000 chars/s x 120 s / 2
    assert JudgeConfig(timeout_s=30).agent_chars == 75_000
    assert JudgeConfig(timeout_s=30, max_artifact_chars=10_000).agent_chars == 10_000


async def test_a_client_error_is_not_retried(fake_judge: FakeJudge) -> None:
    fake_judge.faults.append(401)
    async with build_judge(config(fake_judge)) as judge:
        with pytest.raises(JudgeError, match="HTTP 401"):
            await judge.verdict(*prompt())
    assert len(fake_judge.requests) == 1


OVERFLOWS = ["overflow", "overflow_flat", "overflow_openai"]
REFUSALS = ["content_filter", "content_policy", "filtered"]


@pytest.mark.parametrize("fault", OVERFLOWS + REFUSALS)
async def test_an_overflow_or_a_refusal_is_its_own_error_raised_at_once(
    fake_judge: FakeJudge, fault: str
) -> None:
    fake_judge.faults.append(fault)
    async with build_judge(config(fake_judge)) as judge:
        with pytest.raises(JudgeError) as info:
            await judge.verdict(*prompt())
    assert type(info.value) is (ContextOverflowError if fault in OVERFLOWS else RefusedError)
    assert fake_judge.url in str(info.value)
    assert len(fake_judge.requests) == 1  # the same prompt would fail the same way


@pytest.mark.parametrize("fault", [400, 401, 403, 404, 422])
async def test_other_client_errors_stay_plain_judge_errors(
    fake_judge: FakeJudge, fault: int
) -> None:
    fake_judge.faults.append(fault)
    async with build_judge(config(fake_judge)) as judge:
        with pytest.raises(JudgeError, match=f"HTTP {fault}") as info:
            await judge.verdict(*prompt())
    assert type(info.value) is JudgeError and len(fake_judge.requests) == 1


VLLM_OVERFLOW = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "BadRequestError",
            "code": 400,
        }
    }
)
QUOTED = "BadRequestError: Hosted_vllmException - " + json.dumps(
    {"error": {"code": "content_filter"}}
)


@pytest.mark.parametrize(("status", "text", "kind"), [
    (400, VLLM_OVERFLOW, ContextOverflowError),
    (422, VLLM_OVERFLOW, JudgeError),  # the message alone counts on a 400 only
    (413, '{"error": {"code": "context_length_exceeded"}}', ContextOverflowError),
    (400, '{"error": {"code": "x", "innererror": {"code": "ResponsibleAIPolicyViolation"}}}',
     RefusedError),
    (400, '{"error": {"message": "Invalid model", "code": "model_not_found"}}', JudgeError),
    (404, '{"error": {"message": "The model `m` does not exist.", "type": "NotFoundError"}}',
     JudgeError),
    (401, '{"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}', JudgeError),
    (400, QUOTED, RefusedError),  # a body quoted in an SDK's message
    (400, "prompt is longer than the maximum model length of 4096", ContextOverflowError),
    (400, "<html>Bad Request</html>", JudgeError),
])  # fmt: skip
def test_client_errors_are_classified_by_code_then_by_a_400s_message(
    status: int, text: str, kind: type[JudgeError]
) -> None:
    assert type(client_error(status, text, "m")) is kind


async def test_an_unreachable_endpoint_is_a_judge_error() -> None:
    cfg = JudgeConfig(model="http://127.0.0.1:9/v1#x", max_retries=1, backoff_s=0.0, timeout_s=2.0)
    async with build_judge(cfg) as judge:
        with pytest.raises(JudgeError, match="ConnectError"):
            await judge.verdict(*prompt())


async def test_cache_hit_makes_no_call(fake_judge: FakeJudge, tmp_path: Path) -> None:
    cfg = config(fake_judge, cache_dir=tmp_path / "cache")
    async with build_judge(cfg) as judge:
        first, c1 = await judge.verdict(*prompt())
    async with build_judge(cfg) as judge:
        again, c2 = await judge.verdict(*prompt())
        other, c3 = await judge.verdict(*prompt(answer="The total is 41."))
    assert (c1, c2, c3) == (False, True, False)
    assert again == first and not other.is_criteria_true
    assert judge.calls == 1 and judge.cache_hits == 1
    assert len(fake_judge.requests) == 2
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


async def test_concurrency_is_bounded(fake_judge: FakeJudge) -> None:
    async with build_judge(config(fake_judge, concurrency=2)) as judge:
        results = await asyncio.gather(
            *(judge.verdict(*prompt(answer=f"The total is {i}.")) for i in range(8))
        )
    assert len(results) == 8 and len(fake_judge.requests) == 8
    assert fake_judge.max_in_flight <= 2


def test_api_key_env_is_sent_as_bearer(
    fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-test")

    async def go() -> None:
        async with build_judge(config(fake_judge, api_key_env="MY_JUDGE_KEY")) as judge:
            await judge.verdict(*prompt())

    asyncio.run(go())
    assert fake_judge.requests[0]["auth"] == "Bearer sk-test"


def test_verdict_parsing_tolerates_fences_and_prose_but_not_garbage() -> None:
    assert parse_verdict(
        '```json\n{"rationale": "ok", "is_criteria_true": true}\n```'
    ).is_criteria_true
    assert not parse_verdict(
        'Here: {"rationale": "no", "is_criteria_true": false} done'
    ).is_criteria_true
    with pytest.raises(ValueError):
        parse_verdict("yes")
    with pytest.raises(ValueError):
        parse_verdict("")


@pytest.mark.slow  # importing litellm alone takes 7-35 s of CPU on the shared dev machine
async def test_litellm_models_go_through_litellm_with_the_same_retries(
    fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    cfg = config(
        fake_judge,
        model="litellm:openai/fake-judge",
        api_base=fake_judge.url,
        api_key_env="FAKE_KEY",
    )
    fake_judge.faults.extend([429, "malformed"])
    async with build_judge(cfg) as judge:
        verdict, _ = await judge.verdict(*prompt())
    assert verdict.is_criteria_true and len(fake_judge.requests) == 3
    assert fake_judge.requests[-1]["body"]["model"] == "fake-judge"
    assert fake_judge.requests[-1]["auth"] == "Bearer sk-fake"
    fake_judge.faults.append(401)
    async with build_judge(cfg) as judge:
        with pytest.raises(JudgeError, match="AuthenticationError"):
            await judge.verdict(*prompt(answer="other"))
    assert len(fake_judge.requests) == 4


async def test_requests_are_paced_by_requests_per_minute(fake_judge: FakeJudge) -> None:
    import time

    async with build_judge(
        config(fake_judge, requests_per_minute=1200.0)
    ) as judge:  # one per 50 ms
        t0 = time.monotonic()
        await asyncio.gather(*(judge.verdict(*prompt(answer=f"a{i}")) for i in range(4)))
        elapsed = time.monotonic() - t0
    assert elapsed >= 0.15 and len(fake_judge.requests) == 4


def test_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (
        "KWRL_JUDGE",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "KWRL_JUDGE_CACHE",
        "KWRL_JUDGE_MAX_RETRIES",
    ):
        monkeypatch.delenv(var, raising=False)
    assert JudgeConfig.from_env() is None
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert JudgeConfig.from_env().model == "litellm:gemini/gemini-2.5-flash"  # type: ignore[union-attr]
    monkeypatch.setenv("KWRL_JUDGE", "http://127.0.0.1:8000/v1#qwen")
    monkeypatch.setenv("KWRL_JUDGE_CACHE", str(tmp_path))
    monkeypatch.setenv("KWRL_JUDGE_MAX_RETRIES", "2")
    cfg = JudgeConfig.from_env()
    assert cfg is not None and (cfg.model, cfg.cache_dir, cfg.max_retries) == (
        "http://127.0.0.1:8000/v1#qwen",
        tmp_path,
        2,
    )
    monkeypatch.setenv("KWRL_JUDGE_MAX_RETRIES", "many")
    with pytest.raises(ConfigError, match="max_retries"):
        JudgeConfig.from_env()


async def test_a_judge_that_answers_but_never_with_a_verdict_is_no_verdict(
    fake_judge: FakeJudge,
) -> None:
    from kwrl.grading.judges import NoVerdictError

    fake_judge.faults.extend(["malformed", "wrong_schema"])
    async with build_judge(config(fake_judge, max_retries=1)) as judge:
        with pytest.raises(NoVerdictError, match="no valid verdict after 2 attempts"):
            await judge.verdict(*prompt())
    # the last attempt got no answer at all: infrastructure, whatever came before
    fake_judge.faults.extend(["malformed", 500])
    async with build_judge(config(fake_judge, max_retries=1)) as judge:
        with pytest.raises(JudgeError, match="HTTP 500") as info:
            await judge.verdict(*prompt(answer="other"))
    assert not isinstance(info.value, NoVerdictError)
