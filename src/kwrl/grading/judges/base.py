"""The judge family's base: the verdict contract, its config, and what every transport shares.

A judge answers one question, "is this criterion met by this evidence?", as a `Verdict`
`{rationale, is_criteria_true}` (structured JSON; `parse_verdict` also takes it fenced or inside
prose). `Judge.verdict(system, user)` wraps a transport's single `_complete(messages)` call with the
fault tolerance a trial's reward depends on:

- cache: one JSON file per verdict under `cache_dir`, keyed by sha256(spec, system, user) and
  written atomically, so regrading and a second identical trial cost no call;
- pacing: an asyncio semaphore (`concurrency`) and a requests-per-minute pacer, both per judge
  object, i.e. per trial's verifier (a shared quota across trials belongs to a proxy in front);
- a per-request timeout (`timeout_s`), and a bound on the agent's share of a prompt that a judge
  reading `read_chars_per_s` takes in half of it (`JudgeConfig.agent_chars`).

How a failure is classified (the reward is the product: a policy maximizes exactly what the grader
writes, and an infrastructure error masks the trial's whole group in training, so every failure
the agent's own output can provoke must end as a grade, never as a mask):

- `TransientJudgeError` (429, 408, 409, 5xx, transport errors, timeouts, malformed or off-schema
  output) is retried through tenacity with jittered exponential backoff up to `max_retries`; a
  judge that keeps failing so raises `JudgeError`: the trial is an error, never a silent 0;
- except a judge that keeps answering without a valid verdict (its last attempt answered, and the
  answer was not a verdict): `NoVerdictError`, which the grader turns into a failed criterion.
  What the judge reads is the agent's output, so text that derails it (an injected instruction,
  a refusal-bait) is the agent's doing; as an infrastructure error it would mask the trial's group
  and a policy could trade a 0 for a mask;
- `ContextOverflowError` (the prompt is longer than the judge's context) and `RefusedError` (the
  provider's content filter refused the prompt, or cut the answer: `finish_reason`
  `content_filter`) are raised at once, no retry: the same prompt fails the same way. The grader
  decides whose doing they are (`kwrl.grading.grade`): it rebuilds the prompt with less evidence,
  or with the agent's output withheld, and only a prompt that fails without any agent output is
  infrastructure;
- `JudgeTimeoutError`: every attempt timed out. The grader probes once with the agent's output
  withheld: answered in time, the agent's output is what the judge could not read in time, and the
  criterion fails (a policy could otherwise pad its answer until the judge times out and trade its
  0 for a mask); timed out again, the judge is slow: infrastructure;
- any other `JudgeError` (a 4xx: bad key, unknown model, a request the server rejects) fails at
  once: infrastructure.

`client_error` classifies a 4xx answer for every transport: the provider's error code first
(`context_length_exceeded`; `content_filter`, `content_policy_violation`,
`ResponsibleAIPolicyViolation`), then, on a 400 without such a code, the message as vLLM-style
servers word it (`OVERFLOW_TEXT`, `REFUSAL_TEXT`).

A transport (one file beside this one, registered in `kwrl.grading.judges.JUDGES`) implements
`_complete` and says which environment variables hold its API key (`key_env`), so a trial's
verifier can be handed exactly those.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryError,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from kwrl.config import KwrlConfig, format_validation_error
from kwrl.errors import ConfigError, JudgeError
from kwrl.io import write_json
from kwrl.llm.spec import DEFAULT_JUDGE

DEFAULT_MODEL = DEFAULT_JUDGE
ENV_SPEC = "KWRL_JUDGE"
"""The environment variable naming the judge; `KWRL_JUDGE_<FIELD>` sets any other field."""
ENV_CACHE = "KWRL_JUDGE_CACHE"

log = logging.getLogger("kwrl.grading.judges")


class Verdict(BaseModel):
    """The judge's answer for one criterion (Archipelago's grading contract)."""

    rationale: str
    is_criteria_true: bool


class JudgeConfig(KwrlConfig):
    """Which judge to ask and how hard to try."""

    model: str = DEFAULT_MODEL
    """Judge spec, the grammar policies use: `http(s)://HOST:PORT/v1#NAME` (any OpenAI-compatible
    chat endpoint) or `litellm:PROVIDER/MODEL`."""
    api_key_env: str | None = None
    """Env var holding the API key. Default: OPENAI_API_KEY for URL specs, the provider's own
    variable for litellm models (e.g. GEMINI_API_KEY). Trials pass it to their verifier."""
    api_base: str | None = None
    """Base URL passed to litellm (e.g. a proxy or a `hosted_vllm/...` server); unused for URLs."""
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
    """First backoff; doubles per retry (plus up to as much jitter), capped by backoff_max_s."""
    backoff_max_s: float = Field(default=60.0, ge=0)
    """Longest wait between two attempts."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Timeout of one request. With the default retries the worst case (~10.5 min) stays inside the
    verifier's 900 s task.toml limit."""
    cache_dir: Path | None = None
    """Directory of cached verdicts (one JSON file each); None disables the cache."""
    max_artifact_chars: int = Field(default=300_000, gt=0)
    """Budget of the agent's output in one prompt (the final answer is cut to half of it; the
    artifacts share all of it, headers included); text beyond is cut with a marker. The budget in
    force is `agent_chars`, this or less. A prompt the judge's context cannot take is rebuilt with
    half of it, down to 4,000 (`kwrl.grading.grade`)."""
    read_chars_per_s: float = Field(default=5_000.0, gt=0)
    """Prompt characters the judge is sure to read per second, long prompts included (its slowest
    prefill). The agent's output in a prompt is at most what it reads in half of `timeout_s`
    (`agent_chars`; 300,000 at the defaults), so a judge this fast reads any prompt in time."""

    @property
    def agent_chars(self) -> int:
        """The budget of the agent's output in one prompt: `max_artifact_chars`, or what the judge
        reads in half of `timeout_s` at `read_chars_per_s` when that is less. A judge that still
        times out on every attempt and answers in time with the agent's output withheld was
        slowed by that output: the criterion fails (`JudgeTimeoutError`, `kwrl.grading.grade`)."""
        return max(min(self.max_artifact_chars, int(self.read_chars_per_s * self.timeout_s / 2)), 1)

    @classmethod
    def from_env(cls, model: str | None = None, **overrides: Any) -> JudgeConfig | None:
        """The judge named by `model` or env KWRL_JUDGE, else Gemini when GEMINI_API_KEY or
        GOOGLE_API_KEY is set, else None.

        Every field can also come from env `KWRL_JUDGE_<FIELD>` (e.g. KWRL_JUDGE_MAX_RETRIES=2,
        KWRL_JUDGE_TIMEOUT_S=60); KWRL_JUDGE_CACHE is the cache dir. Keyword overrides win.
        """
        spec = model or os.environ.get(ENV_SPEC)
        if not spec and (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
            spec = DEFAULT_MODEL  # the seed's judge: Gemini, when its key is present
        if not spec:
            return None
        data: dict[str, Any] = {"model": spec}
        if os.environ.get(ENV_CACHE):
            data["cache_dir"] = os.environ[ENV_CACHE]
        for name in cls.model_fields:
            value = os.environ.get(f"{ENV_SPEC}_{name.upper()}")
            if value and name != "model":
                data[name] = value
        try:
            return cls.model_validate({**data, **overrides})
        except ValidationError as e:
            raise ConfigError(format_validation_error("KWRL_JUDGE_* environment", e)) from e


class TransientJudgeError(JudgeError):
    """A failure worth another attempt (rate limit, server error, timeout, malformed output)."""


class MalformedVerdictError(TransientJudgeError):
    """The judge answered, but not with a verdict (retried like any transient failure)."""


class TimedOutError(TransientJudgeError):
    """One attempt got no answer within `timeout_s` (retried)."""


class JudgeTimeoutError(JudgeError):
    """Every attempt timed out: the grader asks once more with the agent's output withheld, and an
    answer in time means the agent's output is what the judge could not read in time: the
    criterion fails (`kwrl.grading.grade`); a timeout again is the judge's (infrastructure)."""


class NoVerdictError(JudgeError):
    """Every attempt was spent and the last one answered without a verdict: the criterion fails
    (`kwrl.grading.grade`), the trial is graded."""


class ContextOverflowError(JudgeError):
    """The prompt is longer than the judge's context (never retried as is): the grader rebuilds it
    with less evidence (`kwrl.grading.grade`)."""


class RefusedError(JudgeError):
    """The judge's content filter refused the prompt (never retried as is): the grader asks once
    more with the agent's output withheld to tell whose text tripped it (`kwrl.grading.grade`)."""


OVERFLOW_CODES = frozenset({"context_length_exceeded"})
"""Provider error codes of a prompt over the context (OpenAI, Azure)."""
REFUSAL_CODES = frozenset(
    {"content_filter", "content_policy_violation", "responsibleaipolicyviolation"}
)
"""Provider error codes of a content-filter refusal (Azure's `content_filter` and its inner
`ResponsibleAIPolicyViolation`, OpenAI's `content_policy_violation`), lower-cased."""
OVERFLOW_TEXT = re.compile(
    r"maximum context length|longer than the maximum model length|"
    r"longer than the model's (?:maximum )?context length|exceeds the model's context window",
    re.IGNORECASE,
)
"""Fallback for 400s without a code (vLLM's OpenAI server answers `"code": 400`): "This model's
maximum context length is N tokens. However, you requested ..." (vLLM, OpenAI), "The decoder
prompt (length N) is longer than the maximum model length of M" (older vLLM), "... is longer than
the model's context length" (TGI-style servers)."""
REFUSAL_TEXT = re.compile(
    r"content management policy|rejected as a result of our safety system", re.IGNORECASE
)
"""Fallback for 400s without a code: Azure's "... triggering Azure OpenAI's content management
policy" and OpenAI's "Your request was rejected as a result of our safety system"."""


def _error_fields(body: Any) -> tuple[set[str], str]:
    """(lower-cased codes and types, message) of a provider's error body: `{"error": {...}}` or
    flat (older vLLM), with Azure's `innererror`."""
    err = body.get("error") if isinstance(body, dict) else None
    err = err if isinstance(err, dict) else body if isinstance(body, dict) else {}
    inner = err.get("innererror")
    found = [err.get("code"), err.get("type")]
    found += [inner.get("code")] if isinstance(inner, dict) else []
    codes = {str(c).lower() for c in found if isinstance(c, str)}
    message = err.get("message")
    return codes, message if isinstance(message, str) else ""


def _json_in(text: str) -> Any:
    """The first JSON object in `text` (an SDK's message quoting the body), else None."""
    start = text.find("{")
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else None
    except json.JSONDecodeError:
        return None


def client_error(status: int, text: str, message: str, body: Any = None) -> JudgeError:
    """The error for a 4xx answer (not a retried status): `ContextOverflowError`, `RefusedError`
    or a plain `JudgeError`, with `message`. `text` is the raw answer or an SDK's message quoting
    it; `body` the parsed error body when the caller has it (else the first JSON object in
    `text`). Codes decide; the message is read only on a 400 whose body names no known code."""
    codes, said = _error_fields(_json_in(text) if body is None else body)
    if codes & OVERFLOW_CODES:
        return ContextOverflowError(message)
    if codes & REFUSAL_CODES:
        return RefusedError(message)
    if status == 400:
        if OVERFLOW_TEXT.search(said or text):
            return ContextOverflowError(message)
        if REFUSAL_TEXT.search(said or text):
            return RefusedError(message)
    return JudgeError(message)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_verdict(content: str | None) -> Verdict:
    """A Verdict from the judge's text (bare JSON, fenced JSON, or JSON inside prose).

    Raises ValueError (pydantic's ValidationError is one) when there is none.
    """
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


class Judge(ABC):
    """Verdicts from one judge model, with cache, pacing, retries and a timeout (module doc).

    Example::

        class EchoJudge(Judge):
            async def _complete(self, messages):
                return '{"rationale": "always", "is_criteria_true": true}'

    Built by `kwrl.grading.judges.build_judge(config)`, which parses `config.model` into a kind
    (the registry key) and a target (what the kind reaches: a URL, a litellm id).
    """

    kind: ClassVar[str]
    """Registry key; `KIND:TARGET` names this judge in a spec."""

    def __init__(self, config: JudgeConfig, target: str) -> None:
        self.config = config
        self.target = target
        self.calls = 0
        """Requests sent (attempts, including retries)."""
        self.cache_hits = 0
        self._sem = asyncio.Semaphore(config.concurrency)
        self._pacer = _Pacer(config.requests_per_minute)

    @property
    def spec(self) -> str:
        """The judge in canonical spec form (recorded in grades.json, part of the cache key)."""
        return f"{self.kind}:{self.target}"

    @classmethod
    def key_env(cls, target: str) -> tuple[str, ...]:
        """Env vars holding this judge's API key when `api_key_env` names none."""
        return ()

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    # ----------------------------------------------------------------- transport

    @abstractmethod
    async def _complete(self, messages: list[dict[str, str]]) -> str | None:
        """One request: the judge's raw text. Raise TransientJudgeError for what a retry may fix,
        JudgeError for what it cannot."""

    def api_key(self) -> str | None:
        """The key from `api_key_env`, else from the first of `key_env` that is set."""
        named = self.config.api_key_env
        for name in (named,) if named else self.key_env(self.target):
            if os.environ.get(name):
                return os.environ[name]
        return None

    # ----------------------------------------------------------------- cache

    def cache_key(self, system: str, user: str) -> str:
        return hashlib.sha256(json.dumps([self.spec, system, user]).encode()).hexdigest()

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

    async def verdict(
        self, system: str, user: str, *, retries: bool = True
    ) -> tuple[Verdict, bool]:
        """(verdict, from_cache). Raises JudgeError after the retries are spent (`JudgeTimeoutError`
        when every attempt timed out); `retries=False`: one attempt (a probe)."""
        key = self.cache_key(system, user)
        hit = self._cached(key)
        if hit is not None:
            self.cache_hits += 1
            return hit, True
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        cfg = self.config
        attempts = cfg.max_retries + 1 if retries else 1
        timeouts = 0

        async def attempt() -> Verdict:
            nonlocal timeouts
            try:
                return await self._attempt(messages)
            except TimedOutError:
                timeouts += 1
                raise

        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential_jitter(
                initial=cfg.backoff_s, max=cfg.backoff_max_s, jitter=cfg.backoff_s
            ),
            retry=retry_if_exception_type(TransientJudgeError),
            before_sleep=before_sleep_log(log, logging.WARNING),
        )
        try:
            verdict = await retrying(attempt)
        except RetryError as e:
            last = e.last_attempt.exception()
            if isinstance(last, MalformedVerdictError):
                raise NoVerdictError(
                    f"judge {self.spec}: no valid verdict after {attempts} attempts; "
                    f"last answer: {last}"
                ) from last
            if timeouts == attempts:
                raise JudgeTimeoutError(
                    f"judge {self.spec}: no answer within {cfg.timeout_s:g} s on any of "
                    f"{attempts} attempts (timeout)"
                ) from last
            raise JudgeError(
                f"judge {self.spec}: no valid verdict after {attempts} attempts; last error: {last}"
            ) from last
        path = self._cache_path(key)
        if path is not None:
            write_json(path, {"model": self.spec, "verdict": verdict.model_dump()})
        return verdict, False

    async def _attempt(self, messages: list[dict[str, str]]) -> Verdict:
        timeout = self.config.timeout_s
        async with self._sem:
            await self._pacer.wait()
            self.calls += 1
            try:
                content = await asyncio.wait_for(self._complete(messages), timeout)
            except TimeoutError as e:
                raise TimedOutError(f"no answer within {timeout:g} s (timeout)") from e
        try:
            return parse_verdict(content)
        except ValueError as e:
            raise MalformedVerdictError(f"malformed verdict: {e}") from e
