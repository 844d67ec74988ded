"""The state the in-process engine's parts share, and one queued request.

`Engine` (`local.py`) is assembled from three parts, each a class over `EngineCore`: `Weights`
(`weights.py`: update, stage, load), `Decoding` (`decode.py`: prefill with prefix reuse, sampling,
finishing a row) and `Batching` (`batching.py`: the worker thread, admission, the decode loop).
`EngineCore` declares the attributes `Engine.__init__` sets, so each part reads them typed; a
part calls only its own bases' methods (batching -> decoding, weights), never upward.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engines.base import EngineOutput

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

    from kwrl.llm.kv_cache import PrefixStore

GREEDY_T = 1e-5
"""Temperatures at or below this sample the argmax (logprobs from the raw logits)."""


@dataclass
class Request:
    """One queued or running request and what it has sampled so far."""

    prompt_ids: list[int]
    params: SamplingParams
    future: concurrent.futures.Future[EngineOutput]
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    limit: int = 0
    limit_is_context: bool = False
    text: str | None = None
    finish: FinishReason | None = None
    generator: Any = None
    abandoned: bool = False
    """The caller went away: stop at the next token (nobody reads the result)."""


@dataclass
class Staged:
    """Updates staged and not yet landed, merged: later tensors win, the last version wins."""

    tensors: dict[str, Any]
    version: int | None
    futures: list[concurrent.futures.Future[int]]


class RequestFuture(concurrent.futures.Future["EngineOutput"]):
    """The future `submit` returns; it knows its request, so `abandon` can find it."""

    request: Request | None = None


class EngineCore:
    """Attributes of the in-process engine, set by `Engine.__init__` (see `local.py`)."""

    model: PreTrainedModel
    tokenizer: Any
    name: str
    device: torch.device
    max_batch_size: int
    continuous: bool
    batch_wait_s: float
    max_context: int
    eos_ids: frozenset[int]
    pad_id: int
    weight_version: int
    stats: dict[str, int]
    _growing: bool
    """Decode appends to KV buffers in place (`kv_cache.growing_layer_cls`)."""
    _prefix: PrefixStore
    _prefix_version: int
    """The weight version the stored prefix KV belongs to."""
    _lock: threading.Lock
    """Held for a whole batch and for a weight update."""
    _stage_lock: threading.Lock
    """Guards `_staged` and `_updates_waiting`."""
    _staged: Staged | None
    _updates_waiting: int
    """`update_weights` calls waiting for the batch lock (the running batch admits no more)."""
    _queue: queue.Queue[Request | None]
    _seed_rng: torch.Generator
    _closed: bool
    _stop_seen: bool
    """The worker took close()'s sentinel while admitting."""
    _inflight: list[Request]
    """Admitted to the running batch, not yet answered."""
