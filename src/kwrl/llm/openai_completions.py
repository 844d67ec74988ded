"""`OpenAICompletionsClient`: TITO over an OpenAI-compatible `/v1/completions` (vLLM, `kwrl serve`).

Each call sends the prompt as token ids with `logprobs: 0` and vLLM's `return_token_ids: true`,
and reads back the sampled `token_ids` and `token_logprobs` of the first choice: exactly what the
sampler produced, never a re-tokenization of the text.

Routing and caching: a trial's `session_id` goes out three ways, since fleets read it in
different places: the `X-Session-ID` header (SkyRL's router, vllm-router), the body's `session_id`
(SkyRL's inference client) and OpenAI's `user` field. `cache_salt` is `w<weight_version>`, so a
prefix cached under old weights is never reused after the trainer pushes new ones; the trainer
calls `set_weight_version` after each push.

Context overflow (vLLM answers 400 "maximum context length") becomes a Completion with no tokens
and finish reason CONTEXT; other failures raise PolicyError after `retries` attempts on transport
errors and 5xx answers.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from kwrl.errors import PolicyError
from kwrl.llm.base import Completion, FinishReason, PolicyClient, SamplingParams
from kwrl.llm.spec import split_url
from kwrl.llm.tool_prompt import parse_tool_calls

_CONTEXT_MARKERS = ("maximum context length", "context_length_exceeded", "context window")


class OpenAICompletionsClient(PolicyClient):
    """Token-in/token-out client of a vLLM-compatible server (see the module doc)."""

    supports_tokens = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        retries: int = 2,
        weight_version: int | None = 0,
        max_connections: int = 256,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.retries = retries
        self.weight_version = weight_version
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=30.0),
            limits=httpx.Limits(max_connections=max_connections),
            transport=transport,
        )

    @classmethod
    def from_spec(cls, target: str, cfg: Any) -> OpenAICompletionsClient:
        """`target` is `BASE_URL#MODEL` (model `default` when no `#`, `kwrl.llm.spec.split_url`)."""
        url, name = split_url(target, field="policy.model")
        return cls(
            url,
            name,
            api_key=cfg.api_key(),
            timeout_s=cfg.timeout_s,
            retries=cfg.retries,
        )

    def set_weight_version(self, version: int | None) -> None:
        """New weights on the server: later requests use a fresh prefix-cache salt."""
        self.weight_version = version

    async def complete(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        session_id: str | None = None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt_ids,
            "logprobs": 0,
            "return_token_ids": True,
            **_sampling(params),
        }
        t0 = time.perf_counter()
        data = await self._post("/completions", body, session_id)
        latency_s = time.perf_counter() - t0
        if data is None:
            return Completion(text="", finish_reason=FinishReason.CONTEXT, latency_s=latency_s)
        choice = _first_choice(data)
        token_ids = choice.get("token_ids")
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        if not isinstance(token_ids, list) or not isinstance(logprobs, list):
            raise PolicyError(
                f"{self.base_url}/completions: the answer has no token_ids/logprobs "
                "(is the server vLLM >= 0.10.2 or kwrl serve, honouring return_token_ids?)"
            )
        if len(token_ids) != len(logprobs):
            raise PolicyError(
                f"{self.base_url}/completions: {len(token_ids)} token ids but {len(logprobs)} logprobs"
            )
        return Completion(
            text=str(choice.get("text") or ""),
            token_ids=[int(t) for t in token_ids],
            logprobs=[float(x) if x is not None else 0.0 for x in logprobs],
            finish_reason=_finish(choice),
            usage=_usage(data),
            weight_version=data.get("kwrl_weight_version", self.weight_version),
            latency_s=latency_s,
        )

    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: SamplingParams,
        *,
        tools: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> Completion:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **_sampling(params)}
        if tools:
            body["tools"] = tools
        t0 = time.perf_counter()
        data = await self._post("/chat/completions", body, session_id)
        latency_s = time.perf_counter() - t0
        if data is None:
            return Completion(text="", finish_reason=FinishReason.CONTEXT, latency_s=latency_s)
        choice = _first_choice(data)
        message = choice.get("message") or {}
        text = str(message.get("content") or "")
        calls = list(message.get("tool_calls") or [])
        if tools and not calls:
            text, calls = parse_tool_calls(text)
        return Completion(
            text=text,
            finish_reason=_finish(choice),
            tool_calls=calls,
            usage=_usage(data),
            weight_version=data.get("kwrl_weight_version", self.weight_version),
            latency_s=latency_s,
        )

    async def context_window(self) -> int | None:
        """The served model's `max_model_len` from `/models` (vLLM, kwrl serve); None if absent."""
        try:
            r = await self._http.get("/models")
            cards = [c for c in r.json().get("data") or [] if isinstance(c, dict)]
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            return None
        card = next((c for c in cards if c.get("id") == self.model), cards[0] if cards else {})
        n = card.get("max_model_len")
        return n if isinstance(n, int) and n > 0 else None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(
        self, path: str, body: dict[str, Any], session_id: str | None
    ) -> dict[str, Any] | None:
        """POST with retries; None means the prompt does not fit the context window."""
        headers: dict[str, str] = {}
        if session_id:
            headers["X-Session-ID"] = session_id
            body = {**body, "session_id": session_id, "user": session_id}
        if self.weight_version is not None:
            body = {**body, "cache_salt": f"w{self.weight_version}"}
        last = ""
        for attempt in range(self.retries + 1):
            try:
                r = await self._http.post(path, json=body, headers=headers)
            except httpx.TransportError as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if r.status_code == 200:
                    return r.json()
                text = r.text[:2000]
                if r.status_code == 400 and any(m in text for m in _CONTEXT_MARKERS):
                    return None
                if r.status_code < 500:
                    raise PolicyError(f"{self.base_url}{path}: HTTP {r.status_code}: {text}")
                last = f"HTTP {r.status_code}: {text}"
            if attempt < self.retries:
                await asyncio.sleep(min(2.0**attempt, 10.0))
        raise PolicyError(
            f"{self.base_url}{path}: failed after {self.retries + 1} attempts: {last}"
        )


def _sampling(params: SamplingParams) -> dict[str, Any]:
    out: dict[str, Any] = {
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
    }
    if params.stop:
        out["stop"] = params.stop
    if params.seed is not None:
        out["seed"] = params.seed
    return out


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise PolicyError(f"policy answer has no choices: {str(data)[:500]}")
    return choices[0]


def _finish(choice: dict[str, Any]) -> FinishReason:
    if choice.get("stop_reason") == "context":
        return FinishReason.CONTEXT
    if choice.get("finish_reason") == "length":
        return FinishReason.LENGTH
    return FinishReason.STOP


def _usage(data: dict[str, Any]) -> dict[str, int]:
    usage = data.get("usage") or {}
    return {k: int(v) for k, v in usage.items() if isinstance(v, int)}
