"""`OpenAIHTTPJudge`: any OpenAI-compatible chat endpoint (vLLM, `kwrl serve`, a proxy), over httpx.

Spec: `http(s)://HOST:PORT/v1#NAME` (NAME `default` when absent). Each request is one
`POST /chat/completions` asking for the verdict's JSON schema (`response_format`); the key, when
there is one, goes as a bearer token (`api_key_env`, default OPENAI_API_KEY).

Non-obvious choice: plain httpx rather than litellm or the openai SDK. The grader starts once per
trial inside the sandbox, and importing litellm costs seconds; retries are the base class's, so
the SDK's own would only double them.

Failures: 408/409/429/5xx, transport errors and a body without a choice are transient; any other
4xx is classified by `base.client_error` (a prompt over the context, a content-filter refusal, or
infrastructure); a 200 whose choice ended with `finish_reason` `content_filter` is a refusal, as a
400 from the filter is.
"""

from __future__ import annotations

from typing import ClassVar

import httpx

from kwrl.grading.judges.base import (
    Judge,
    JudgeConfig,
    RefusedError,
    TransientJudgeError,
    Verdict,
    client_error,
)
from kwrl.llm.spec import split_url

_RETRY_STATUS = (408, 409, 429)


class OpenAIHTTPJudge(Judge):
    """Chat completions against an OpenAI-compatible base URL (see the module doc)."""

    kind: ClassVar[str] = "openai"

    def __init__(self, config: JudgeConfig, target: str) -> None:
        super().__init__(config, target)
        self.base_url, self.model = split_url(target, field="judge")
        self._client: httpx.AsyncClient | None = None

    @property
    def spec(self) -> str:
        return f"{self.base_url}#{self.model}"

    @classmethod
    def key_env(cls, target: str) -> tuple[str, ...]:
        return ("OPENAI_API_KEY",)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _complete(self, messages: list[dict[str, str]]) -> str | None:
        cfg = self.config
        if self._client is None:
            key = self.api_key()
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            # No timeout of its own: the base class bounds each attempt (`timeout_s`), one clock.
            self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=None)
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "verdict",
                    "schema": Verdict.model_json_schema(),
                    "strict": True,
                },
            },
        }
        try:
            resp = await self._client.post("/chat/completions", json=body)
        except (httpx.TimeoutException, httpx.TransportError) as e:
            raise TransientJudgeError(f"{type(e).__name__}: {e}") from e
        if resp.status_code in _RETRY_STATUS or resp.status_code >= 500:
            raise TransientJudgeError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        if resp.status_code >= 400:
            said = f"judge {self.spec}: HTTP {resp.status_code} from {self.base_url}: {resp.text[:300]}"
            raise client_error(resp.status_code, resp.text, said)
        try:
            choice = resp.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise TransientJudgeError(f"malformed completion response: {resp.text[:200]!r}") from e
        if choice.get("finish_reason") == "content_filter":
            raise RefusedError(
                f"judge {self.spec}: the answer ended by the content filter "
                f"(finish_reason content_filter): {resp.text[:300]}"
            )
        return content
