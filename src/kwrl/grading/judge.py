"""The LLM judge: one criterion, the evidence, a structured verdict `{rationale, is_criteria_true}`.

`build_prompt` fills `judge_prompt.txt` (Archipelago's grading rules, in kwrl's own words) with the
task, the scope, the final answer and the selected artifacts. `Judge.verdict(system, user)` returns a
`Verdict`, with the fault tolerance a trial's reward depends on:

- concurrency: an asyncio semaphore (`concurrency`) and a requests-per-minute pacer, both per
  process, i.e. per trial's verifier (a shared quota across trials belongs to a proxy in front);
- retries: 429, 408, 5xx, transport errors, timeouts and malformed output (not JSON, or not the
  schema) are retried with exponential backoff up to `max_retries`; other 4xx (bad key, bad model)
  fail at once;
- a per-request timeout;
- an on-disk cache keyed by sha256(model, system, user): one JSON file per verdict, written
  atomically, so regrading and a second identical trial cost no call;
- a judge that keeps failing raises `JudgeError`: the trial is an error, never a silent 0.

Models: `openai:<base_url>#<model>` speaks the OpenAI chat-completions protocol over httpx to any
compatible endpoint (a local vLLM, a proxy); anything else is a litellm model id
(`gemini/gemini-2.5-flash` with GOOGLE_API_KEY / GEMINI_API_KEY, `openai/gpt-5`, ...). The direct
path exists because the grader starts once per trial inside the sandbox, and importing litellm
costs seconds; litellm is imported only when a litellm model is used.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import time
from pathlib import Path
from string import Template
from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError

from kwrl.config import KwrlConfig, format_validation_error
from kwrl.errors import ConfigError, JudgeError
from kwrl.grading.evidence import Artifact, Scope
from kwrl.grading.render import truncate
from kwrl.io import write_json

PROMPT_FILE = Path(__file__).with_name("judge_prompt.txt")
DEFAULT_MODEL = "gemini/gemini-2.5-flash"

SCOPE_TEXT: dict[Scope, str] = {
    "answer": "This criterion is graded on the agent's final answer only. File changes are not shown.",
    "files": "This criterion is graded on the changes the agent made (the artifacts) only; the final "
    "answer is not evidence for it.",
    "both": "This criterion is graded on the agent's final answer and the changes it made.",
}


class Verdict(BaseModel):
    rationale: str
    is_criteria_true: bool


class JudgeConfig(KwrlConfig):
    """How to reach the judge and how hard to try."""

    model: str = DEFAULT_MODEL
    """litellm model id, or `openai:<base_url>#<model>` for any OpenAI-compatible endpoint."""
    api_key_env: str | None = None
    """Env var holding the API key (`openai:` endpoints default to OPENAI_API_KEY; litellm models
    default to the provider's own variable, e.g. GEMINI_API_KEY)."""
    api_base: str | None = None
    """Base URL passed to litellm (e.g. a proxy or `hosted_vllm/...` server); unused for `openai:`."""
    temperature: float = 0.0
    """Sampling temperature of the judge."""
    max_tokens: int = Field(default=4096, gt=0)
    """Most tokens the judge may answer with."""
    concurrency: int = Field(default=8, gt=0)
    """Judge requests in flight at once."""
    requests_per_minute: float | None = Field(default=600.0, gt=0)
    """Pace of request starts; None for no pacing."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, on 429/5xx/timeouts/malformed output."""
    backoff_s: float = Field(default=2.0, ge=0)
    """First backoff; doubles per retry (with jitter), capped by backoff_max_s."""
    backoff_max_s: float = Field(default=60.0, ge=0)
    """Longest wait between two attempts."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Timeout of one request. With the default retries the worst case (~10.5 min) stays inside the
    verifier's 900 s task.toml limit."""
    cache_dir: Path | None = None
    """Directory of cached verdicts (one JSON file each); None disables the cache."""
    max_artifact_chars: int = Field(default=300_000, gt=0)
    """Budget of artifact text in one prompt; artifacts beyond it are cut with a marker."""

    @classmethod
    def from_env(cls, model: str | None = None, **overrides: Any) -> JudgeConfig | None:
        """The judge named by `model` or env KWRL_JUDGE, else Gemini when GEMINI_API_KEY or
        GOOGLE_API_KEY is set, else None.

        Every field can also come from env `KWRL_JUDGE_<FIELD>` (e.g. KWRL_JUDGE_MAX_RETRIES=2,
        KWRL_JUDGE_TIMEOUT_S=60); KWRL_JUDGE_CACHE is the cache dir. Keyword overrides win.
        """
        spec = model or os.environ.get("KWRL_JUDGE")
        if not spec and (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
            spec = DEFAULT_MODEL  # the seed's judge: Gemini, when its key is present
        if not spec:
            return None
        data: dict[str, Any] = {"model": spec}
        if os.environ.get("KWRL_JUDGE_CACHE"):
            data["cache_dir"] = os.environ["KWRL_JUDGE_CACHE"]
        for name in cls.model_fields:
            value = os.environ.get(f"KWRL_JUDGE_{name.upper()}")
            if value and name != "model":
                data[name] = value
        try:
            return cls.model_validate({**data, **overrides})
        except ValidationError as e:
            raise ConfigError(format_validation_error("KWRL_JUDGE_* environment", e)) from e


def parse_model(spec: str) -> tuple[str | None, str]:
    """`openai:http://host:8000/v1#qwen` -> ("http://host:8000/v1", "qwen"); else (None, spec)."""
    if not spec.startswith("openai:"):
        return None, spec
    rest = spec.removeprefix("openai:")
    base, sep, model = rest.rpartition("#")
    if not sep or not base.startswith(("http://", "https://")) or not model:
        raise ConfigError(f"judge model {spec!r}: expected openai:<http(s) base_url>#<model>")
    return base.rstrip("/"), model


# --------------------------------------------------------------------------- prompt


def _load_prompt() -> tuple[str, Template]:
    text = PROMPT_FILE.read_text(encoding="utf-8")
    _, rest = text.split("=== SYSTEM ===\n", 1)
    system, user = rest.split("=== USER ===\n", 1)
    return system.strip(), Template(user)


def render_artifact(a: Artifact, budget: int) -> str:
    content = a.content
    cut = len(content) > budget
    if cut:
        content = content[: max(budget, 0)] + "\n[truncated]"
    attrs = f'id="{a.id}" kind="{a.kind}" change="{a.change}" path="{a.path}"' + (
        ' truncated="true"' if cut else ""
    )
    return f"<ARTIFACT {attrs}>\n{content}\n</ARTIFACT>"


def build_prompt(
    *,
    task: str,
    answer: str,
    criterion: str,
    scope: Scope,
    artifacts: list[Artifact],
    max_artifact_chars: int,
) -> tuple[str, str]:
    """(system, user) messages for one criterion."""
    system, user = _load_prompt()
    parts: list[str] = []
    if scope in ("answer", "both"):
        parts.append(
            f"<FINAL_ANSWER>\n{truncate(answer.strip(), max_artifact_chars // 2) or '(the agent gave no final answer)'}\n</FINAL_ANSWER>"
        )
    if scope in ("files", "both"):
        if artifacts:
            budget = max_artifact_chars // len(artifacts)
            parts.extend(render_artifact(a, budget) for a in artifacts)
        else:
            parts.append("(the agent made no changes to files, mail, calendar or chat)")
    filled = user.safe_substitute(
        task=task.strip() or "(task text not available)",
        scope=SCOPE_TEXT[scope],
        output="\n\n".join(parts),
        criterion=criterion.strip(),
    )
    return system, filled


# --------------------------------------------------------------------------- verdict parsing


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_verdict(content: str | None) -> Verdict:
    """A Verdict from the judge's text (bare JSON, fenced JSON, or JSON inside prose)."""
    if not content or not content.strip():
        raise ValueError("empty judge output")
    text = _FENCE.sub("", content.strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError(f"judge output is not JSON: {content[:200]!r}") from None
        data = json.loads(text[start : end + 1])
    return Verdict.model_validate(data)


class _Retryable(Exception):
    """A failure worth another attempt (rate limit, server error, timeout, malformed output)."""


class _Pacer:
    """Spaces request starts at least 60/rpm seconds apart."""

    def __init__(self, rpm: float | None) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self.next_at = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self.lock:
            now = time.monotonic()
            delay = self.next_at - now
            self.next_at = max(now, self.next_at) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


# --------------------------------------------------------------------------- judge


class Judge:
    """Verdicts from one judge model, with cache, pacing, retries and a timeout (module docstring)."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.base_url, self.model = parse_model(config.model)
        self.calls = 0
        """Requests sent (attempts, including retries)."""
        self.cache_hits = 0
        self._sem = asyncio.Semaphore(config.concurrency)
        self._pacer = _Pacer(config.requests_per_minute)
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ----------------------------------------------------------------- cache

    def cache_key(self, system: str, user: str) -> str:
        return hashlib.sha256(json.dumps([self.config.model, system, user]).encode()).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        d = self.config.cache_dir
        return None if d is None else Path(d) / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> Verdict | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            return Verdict.model_validate(json.loads(path.read_text(encoding="utf-8"))["verdict"])
        except (json.JSONDecodeError, KeyError, ValidationError, OSError):
            return None  # a damaged cache entry is a miss, then overwritten

    # ----------------------------------------------------------------- calls

    async def verdict(self, system: str, user: str) -> tuple[Verdict, bool]:
        """(verdict, from_cache). Raises JudgeError after the retries are spent."""
        key = self.cache_key(system, user)
        hit = self._cached(key)
        if hit is not None:
            self.cache_hits += 1
            return hit, True
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        cfg = self.config
        last = ""
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                wait = min(cfg.backoff_max_s, cfg.backoff_s * 2 ** (attempt - 1))
                await asyncio.sleep(wait * (0.5 + random.random() / 2))
            try:
                async with self._sem:
                    await self._pacer.wait()
                    self.calls += 1
                    content = await asyncio.wait_for(self._complete(messages), cfg.timeout_s)
                verdict = parse_verdict(content)
            except (TimeoutError, _Retryable, ValueError, ValidationError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                continue
            path = self._cache_path(key)
            if path is not None:
                write_json(path, {"model": cfg.model, "verdict": verdict.model_dump()})
            return verdict, False
        raise JudgeError(
            f"judge {cfg.model}: no valid verdict after {cfg.max_retries + 1} attempts; last error: {last}"
        )

    async def _complete(self, messages: list[dict[str, str]]) -> str | None:
        if self.base_url is not None:
            return await self._complete_http(messages)
        return await self._complete_litellm(messages)

    async def _complete_http(self, messages: list[dict[str, str]]) -> str | None:
        cfg = self.config
        if self._client is None:
            key = os.environ.get(cfg.api_key_env or "OPENAI_API_KEY", "")
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            self._client = httpx.AsyncClient(
                base_url=self.base_url or "", headers=headers, timeout=cfg.timeout_s
            )
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
            raise _Retryable(f"{type(e).__name__}: {e}") from e
        if resp.status_code in (408, 409, 429) or resp.status_code >= 500:
            raise _Retryable(f"HTTP {resp.status_code}: {resp.text[:200]}")
        if resp.status_code >= 400:
            raise JudgeError(
                f"judge {cfg.model}: HTTP {resp.status_code} from {self.base_url}: {resp.text[:300]}"
            )
        try:
            return resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise _Retryable(f"malformed completion response: {resp.text[:200]!r}") from e

    async def _complete_litellm(self, messages: list[dict[str, str]]) -> str | None:
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
        if cfg.api_key_env:
            extra["api_key"] = os.environ.get(cfg.api_key_env, "")
        elif self.model.startswith("gemini/") and not os.environ.get("GEMINI_API_KEY"):
            extra["api_key"] = os.environ.get("GOOGLE_API_KEY", "")  # the seed names GOOGLE_API_KEY
        try:
            resp: Any = await litellm.acompletion(
                model=self.model,
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
            raise JudgeError(f"judge {cfg.model}: {type(e).__name__}: {e}") from e
        except Exception as e:  # provider SDK errors vary; classify by status deliberately
            status = getattr(e, "status_code", None)
            if not isinstance(status, int) or status in (408, 409, 429) or status >= 500:
                raise _Retryable(f"{type(e).__name__}: {e}") from e
            raise JudgeError(f"judge {cfg.model}: {type(e).__name__}: {e}") from e
        return resp.choices[0].message.content
