"""`LiteLLMJudge` classifies what litellm raises: a prompt over the context, a content-filter
refusal, other client errors; for real, through litellm's OpenAI-compatible providers (`openai/`,
`hosted_vllm/`) against the loopback judge (the one faked seam) answering as vLLM, OpenAI and
Azure do.

litellm 1.110 raises `ContextWindowExceededError` itself for vLLM's "maximum context length" 400 and
OpenAI's `context_length_exceeded`; it leaves an older vLLM's "longer than the maximum model
length" 400, Azure's `content_filter` 400 and (for `openai/`) OpenAI's `content_policy_violation`
as a plain `BadRequestError`, which the judge classifies by status and body (`base.client_error`).
"""

from __future__ import annotations

import pytest
from grading_testkit import FakeJudge

from kwrl.errors import JudgeError
from kwrl.grading.judges import ContextOverflowError, JudgeConfig, RefusedError, build_judge

pytestmark = pytest.mark.slow  # importing litellm alone takes 5-35 s of CPU on the shared machine

EXPECTED: dict[str | int, type[JudgeError]] = {
    "overflow": ContextOverflowError,
    "overflow_flat": ContextOverflowError,
    "overflow_openai": ContextOverflowError,
    "content_filter": RefusedError,
    "content_policy": RefusedError,
    "filtered": RefusedError,  # a 200 whose finish_reason is content_filter
    400: JudgeError,
    401: JudgeError,
    404: JudgeError,
}


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
async def test_overflows_and_refusals_through_litellm_are_classified_at_once(
    fake_judge: FakeJudge, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from litellm.exceptions import ContextWindowExceededError

    monkeypatch.setenv("FAKE_KEY", "sk-fake")
    cfg = JudgeConfig(model=f"litellm:{provider}/fake-judge", api_base=fake_judge.url,
                      api_key_env="FAKE_KEY", backoff_s=0.0, requests_per_minute=None)  # fmt: skip
    async with build_judge(cfg) as judge:
        for n, (fault, kind) in enumerate(EXPECTED.items(), 1):
            fake_judge.faults.append(fault)
            with pytest.raises(JudgeError) as info:
                await judge.verdict("system", f"user {fault}")
            assert type(info.value) is kind, (fault, info.value)
            assert len(fake_judge.requests) == n, fault  # never retried
            if fault in ("overflow", "overflow_openai"):  # litellm's own mapping
                assert isinstance(info.value.__cause__, ContextWindowExceededError)
        # the standing modes: the same request is judged once the limits allow it
        fake_judge.context_chars, fake_judge.refuse_marker = 40, "MARK"
        with pytest.raises(ContextOverflowError):
            await judge.verdict("system", "x" * 50)
        with pytest.raises(RefusedError):
            await judge.verdict("system", "MARK")
        fake_judge.context_chars = fake_judge.refuse_marker = None
        verdict, _ = await judge.verdict("system", "MARK")
    assert verdict.rationale.startswith("scripted")
