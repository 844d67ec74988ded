"""The policy client interface the agent and trainer use.

Two ways to ask a policy for the next assistant turn:

- `complete(prompt_ids)`: token in, token out (TITO). The caller owns the token history; the client
  returns exactly the sampled token ids and their logprobs under the sampling policy. Used for RL
  (vLLM `/v1/completions` with `return_token_ids`, `kwrl serve`, the in-process engine).
- `chat(messages, tools)`: text in, text out, for API models evaluated through litellm; no token ids.

A client advertises which it supports through `supports_tokens`; a token client that samples in
this process also hands over its tokenizer (`tokenizer()`), so nobody loads it a second time.
Implementations live beside this file, one per file, and are built from a `PolicyConfig` by
`build_policy`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class FinishReason(StrEnum):
    STOP = "stop"
    """The policy ended its turn (EOS or a stop string)."""
    LENGTH = "length"
    """max_tokens reached: the turn was cut."""
    CONTEXT = "context"
    """The prompt (plus max_tokens) does not fit the context window."""


class SamplingParams(BaseModel):
    max_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = Field(default_factory=list)
    seed: int | None = None


class Completion(BaseModel):
    """One sampled turn. For token clients `token_ids` and `logprobs` have equal length."""

    text: str
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    finish_reason: FinishReason = FinishReason.STOP
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """Structured tool calls, only from chat clients whose provider parses them."""
    usage: dict[str, int] = Field(default_factory=dict)
    weight_version: int | None = None
    """Version of the weights that sampled this turn, when the policy reports it (engine, `kwrl serve`)."""
    latency_s: float | None = None
    """Seconds the endpoint took, timed by the client around its request alone ("on the wire":
    retries of a failed request included, the client's own set-up and imports not); None: the
    caller times the call."""


class PolicyClient(ABC):
    supports_tokens: bool = False

    @classmethod
    def from_spec(cls, target: str, cfg: Any) -> PolicyClient:
        """Build from a spec's target and a `kwrl.llm.policy.PolicyConfig` (used by `build_policy`)."""
        raise NotImplementedError(f"{cls.__name__} cannot be built from a policy spec")

    async def complete(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        session_id: str | None = None,
    ) -> Completion:
        """Sample a continuation of `prompt_ids` (token clients only)."""
        raise NotImplementedError(f"{type(self).__name__} does not take token-id prompts")

    @abstractmethod
    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: SamplingParams,
        *,
        tools: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> Completion:
        """Sample the next assistant turn of a chat."""

    async def warm(self) -> None:  # noqa: B027 - optional hook
        """Do now what the first call would otherwise pay for on the agent's clock (imports,
        connections): the agent calls it before its first turn, so that turn's latency is the
        endpoint's (`kwrl.rollout.failures.policy_was_slow` blames the endpoint by it)."""

    async def context_window(self) -> int | None:
        """Tokens the model attends to (prompt + completion), when the policy can tell; else None."""
        return None

    def tokenizer(self) -> Any | None:
        """The tokenizer the policy samples with, when this client holds it (an engine in this
        process: `engine:`, `vllm:`, `live:`); None when the caller loads one by name (a server's
        served name, `kwrl.llm.spec.served_name`). The agent renders its TITO prompts with it."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
