"""`LiteLLMJudge`: any litellm model (Gemini, OpenAI, Anthropic, a `hosted_vllm/...` server).

Spec: `litellm:PROVIDER/MODEL`, e.g. `litellm:gemini/gemini-2.5-flash` (key GEMINI_API_KEY or
GOOGLE_API_KEY). The verdict schema goes as litellm's `response_format`; litellm's own retries are
off (the base class retries). Provider errors are classified by status: 408/409/429/5xx and errors
without a status are transient, authentication, permission, bad request and not-found are not.

litellm is imported on the first call (it is slow to import); `LITELLM_LOCAL_MODEL_COST_MAP=True`
keeps that import off the network.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from kwrl.errors import JudgeError
from kwrl.grading.judges.base import Judge, TransientJudgeError, Verdict

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
            NotFoundError,
            PermissionDeniedError,
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
        except fatal as e:
            raise JudgeError(f"judge {self.spec}: {type(e).__name__}: {e}") from e
        except Exception as e:  # provider SDK errors vary; classify by status deliberately
            status = getattr(e, "status_code", None)
            if not isinstance(status, int) or status in (408, 409, 429) or status >= 500:
                raise TransientJudgeError(f"{type(e).__name__}: {e}") from e
            raise JudgeError(f"judge {self.spec}: {type(e).__name__}: {e}") from e
        return resp.choices[0].message.content
