"""`LiteLLMJudge`: any litellm model (Gemini, OpenAI, Anthropic, a `hosted_vllm/...` server).

Spec: `litellm:PROVIDER/MODEL`, e.g. `litellm:gemini/gemini-2.5-flash` (key GEMINI_API_KEY or
GOOGLE_API_KEY). The verdict schema goes as litellm's `response_format`; litellm's own retries are
off (the base class retries). Provider errors are classified by status: 408/409/429/5xx and errors
without a status are transient (its `Timeout` is a timeout like the base's own); litellm's `ContextWindowExceededError` is a `ContextOverflowError`,
its `ContentPolicyViolationError` a `RefusedError`; any other 4xx goes through `base.client_error`
on its body (litellm 1.110 leaves some of those as a plain BadRequestError: an older vLLM's
"longer than the maximum model length", Azure's `content_filter` 400, and, for `openai/` models,
OpenAI's `content_policy_violation`). A choice that ended with `finish_reason` `content_filter` is
a refusal too.

litellm is imported on the first call (it is slow to import); `LITELLM_LOCAL_MODEL_COST_MAP=True`
keeps that import off the network.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from kwrl.grading.judges.base import (
    ContextOverflowError,
    Judge,
    RefusedError,
    TimedOutError,
    TransientJudgeError,
    Verdict,
    client_error,
)

_PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),  # the seed names GOOGLE_API_KEY
    "together_ai": ("TOGETHERAI_API_KEY",),
    "hosted_vllm": ("HOSTED_VLLM_API_KEY",),
}


class LiteLLMJudge(Judge):
    """Chat completions through litellm (see the module doc)."""

    kind: ClassVar[str] = "litellm"

    @classmethod
    def key_env(cls, target: str) -> tuple[str, ...]:
        """The provider's variable: `gemini/...` -> GEMINI_API_KEY, GOOGLE_API_KEY; `P/...` ->
        P_API_KEY; a bare model name (`gpt-4o`) -> OPENAI_API_KEY, as litellm routes it."""
        provider, sep, _ = target.partition("/")
        if not sep:
            return ("OPENAI_API_KEY",)
        return _PROVIDER_KEYS.get(provider, (f"{provider.upper()}_API_KEY",))

    async def _complete(self, messages: list[dict[str, str]]) -> str | None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm
        from litellm.exceptions import (
            AuthenticationError,
            BadRequestError,
            ContentPolicyViolationError,
            ContextWindowExceededError,
            NotFoundError,
            PermissionDeniedError,
            Timeout,
        )

        cfg = self.config
        fatal = (AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError)
        extra: dict[str, Any] = {}
        if cfg.api_base:
            extra["api_base"] = cfg.api_base
        key = self.api_key()
        if key:
            extra["api_key"] = key
        try:
            resp: Any = await litellm.acompletion(
                model=self.target,
                messages=messages,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                response_format=Verdict,
                timeout=cfg.timeout_s,
                num_retries=0,
                max_retries=0,
                **extra,
            )
        except ContextWindowExceededError as e:
            raise ContextOverflowError(f"judge {self.spec}: {type(e).__name__}: {e}") from e
        except ContentPolicyViolationError as e:
            raise RefusedError(f"judge {self.spec}: {type(e).__name__}: {e}") from e
        except Timeout as e:  # litellm's clock ran out before the base's: the same timeout
            raise TimedOutError(f"no answer within {cfg.timeout_s:g} s (timeout): {e}") from e
        except Exception as e:  # provider SDK errors vary; classify by status deliberately
            status = getattr(e, "status_code", None)
            if isinstance(e, fatal) and not isinstance(status, int):
                status = 400  # a client error whatever its status says
            if not isinstance(status, int) or status in (408, 409, 429) or status >= 500:
                raise TransientJudgeError(f"{type(e).__name__}: {e}") from e
            said = f"judge {self.spec}: {type(e).__name__}: {e}"
            raise client_error(status, str(e), said, getattr(e, "body", None)) from e
        choice = resp.choices[0]
        if getattr(choice, "finish_reason", None) == "content_filter":
            raise RefusedError(
                f"judge {self.spec}: the answer ended by the content filter "
                f"(finish_reason content_filter): {choice.message.content!r:.300}"
            )
        return choice.message.content
