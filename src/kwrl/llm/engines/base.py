"""What a sampling engine in this process promises (`SamplingEngine`) and returns (`EngineOutput`).

An engine owns one model in this process and samples token-id prompts in batches for any number
of callers (the agent's turns, `kwrl serve`, the trainer's held-out evaluation); the trainer
pushes new weights into it between or during batches. Two members implement the protocol: the
in-process transformers engine (`kwrl.llm.engines.local.Engine`, CPU or one accelerator) and vLLM
(`kwrl.llm.engines.vllm.VLLMEngine`, a GPU). Everything above an engine (`EngineClient`, the
server, the trainer's weight push) speaks this protocol only, so either serves any of them.

Contract of a result (`EngineOutput`), the TITO property the trainer relies on: `token_ids` are
exactly the sampled ids (EOS included when sampled), `logprobs[i]` is the log-softmax of the
temperature-scaled logits at the step that sampled `token_ids[i]` (raw logits at temperature 0),
so a fresh forward pass over prompt + completion reproduces them. The finish reason is STOP (EOS
or a stop string), LENGTH (max_tokens) or CONTEXT (the context window ran out). `token_versions`
is each token's weight version; `weight_version` the first token's (the oldest).

Weights: `update_weights(state_dict)` (Hugging Face parameter names) returns the new
`weight_version`; `stage_weights(state_dict, version)` returns at once with a future of that
version, and the update lands between two decode steps (what a disaggregated worker calls as
updates stream in). A caller may also set `weight_version` itself (the trainer numbers versions
by its learner's steps).

`EngineBase` is the caller's side both members share: `generate`, `generate_sync` and
`generate_many` over a member's own `submit`, prompts checked the same way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kwrl.errors import PolicyError
from kwrl.llm.base import FinishReason, SamplingParams

if TYPE_CHECKING:
    import torch


@dataclass
class EngineOutput:
    """One sampled completion: ids and logprobs of equal length, text, why it stopped."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: FinishReason
    prompt_tokens: int
    weight_version: int
    """Version of the weights that sampled the first token (the oldest; the batch's when none)."""
    token_versions: list[int] = field(default_factory=list)
    """Weight version that sampled each token (rises when a staged update lands mid-completion)."""

    @property
    def last_weight_version(self) -> int:
        return self.token_versions[-1] if self.token_versions else self.weight_version


class SamplingEngine(Protocol):
    """A model sampled in batches in this process, whose weights the trainer replaces.

    Example: a new member is a class with these attributes and methods, a loader in
    `kwrl.llm.engines.registry.ENGINES` and a settings sub-config in `PolicyConfig` named like its
    kind (see the registry's docstring)::

        class MyEngine:
            def __init__(self, model: str, cfg: MyConfig) -> None: ...
            async def generate(self, prompt_ids, params) -> EngineOutput: ...
            ...
    """

    name: str
    """What the engine serves (a model name or folder), for messages and `kwrl serve`."""
    tokenizer: Any
    """The Hugging Face tokenizer of the model (agents render chat templates with it)."""
    max_context: int
    """Context window in tokens (prompt + completion)."""
    weight_version: int
    """Version of the weights now loaded (0 at load; the caller may renumber it)."""
    stats: dict[str, int]
    """Counters since start (requests and completion tokens at least)."""

    def submit(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> concurrent.futures.Future[EngineOutput]:
        """Queue one request from any thread; the future resolves to its result (or a
        PolicyError). Cancelling the future abandons the request."""
        ...

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> EngineOutput:
        """Sample one completion; concurrent calls share batches; cancelling abandons it."""
        ...

    def generate_sync(self, prompt_ids: list[int], params: SamplingParams) -> EngineOutput: ...

    def generate_many(
        self, prompts: list[list[int]], params: SamplingParams
    ) -> list[EngineOutput]: ...

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        """Load `state_dict` (all or some parameters); returns the new `weight_version`."""
        ...

    def stage_weights(
        self, state_dict: Mapping[str, torch.Tensor], version: int | None = None
    ) -> concurrent.futures.Future[int]:
        """Land `state_dict` between two decode steps without waiting for running requests; the
        future resolves to the new version (`version` if given, else the current one + 1)."""
        ...

    def load_weights(self, path: Path | str) -> int:
        """Reload weights from a checkpoint (a safetensors file or a model folder)."""
        ...

    def close(self) -> None:
        """Stop serving; later submits raise PolicyError."""
        ...


class EngineBase:
    """The caller's side of an engine over its `submit` (see the module doc)."""

    name: str

    def submit(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> concurrent.futures.Future[EngineOutput]:
        raise NotImplementedError

    def abandon(self, fut: concurrent.futures.Future[EngineOutput]) -> None:
        """The caller of `fut` no longer wants it (a member may also stop it mid-decode)."""
        fut.cancel()

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> EngineOutput:
        """Sample one completion of `prompt_ids`; concurrent calls are batched together.
        Cancelling the call (an agent timeout) abandons the request."""
        fut = self.submit(prompt_ids, params)
        try:
            return await asyncio.wrap_future(fut)
        except asyncio.CancelledError:
            self.abandon(fut)
            raise

    def generate_sync(self, prompt_ids: list[int], params: SamplingParams) -> EngineOutput:
        return self.submit(prompt_ids, params).result()

    def generate_many(self, prompts: list[list[int]], params: SamplingParams) -> list[EngineOutput]:
        """Submit all prompts at once (one batch when they fit) and wait for all of them."""
        futs = [self.submit(p, params) for p in prompts]
        return [f.result() for f in futs]

    @staticmethod
    def check_prompt(what: str, prompt_ids: list[int], vocab: int, closed: bool) -> list[int]:
        """A copy of `prompt_ids`, or a PolicyError naming `what` (the engine) and the fault."""
        if closed:
            raise PolicyError(f"{what}: closed")
        if not prompt_ids:
            raise PolicyError(f"{what}: empty prompt (give at least one token id)")
        bad = [t for t in prompt_ids if not 0 <= t < vocab]
        if bad:
            raise PolicyError(f"{what}: prompt token ids out of range [0, {vocab}): {bad[:5]}")
        return list(prompt_ids)
