"""The in-process engine: batched sampling from a transformers causal LM, with exact logprobs.

`Engine` owns one model in one worker thread and implements `SamplingEngine`
(`kwrl.llm.engines.base`, which states the result and weight contract). Callers submit token-id
prompts from any thread or event loop (`await engine.generate(ids, params)` or
`engine.generate_sync`); the worker batches them. Its parts, one file each over the shared state
of `core.py`: `batching.py` (the worker thread, continuous admission, the decode loop),
`decode.py` (prefill with prefix reuse, sampling, finishing a row) and `weights.py` (update,
stage, load). This file holds its settings (`EngineConfig`), loading and the caller's side:
submit, abandon, close.

A caller that goes away (its coroutine is cancelled: an agent timeout, a cancelled trial) drops
its request: a queued one is never started, a running one stops at its next token
(`abandon(future)`; `generate` does it on cancellation). At interpreter exit every engine drops
what it runs and its worker is joined, so no thread is inside torch while the process ends (which
aborted it: exit 134).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import queue
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kwrl.config import KwrlConfig
from kwrl.llm.base import SamplingParams
from kwrl.llm.engines.base import EngineBase, EngineOutput
from kwrl.llm.engines.batching import Batching
from kwrl.llm.engines.core import Request, RequestFuture

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class EngineConfig(KwrlConfig):
    """How the in-process engine loads and batches a model."""

    model: str = "smollm2-135m"
    """A packaged model name, a local HF model folder, or a hub id."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights and compute dtype (float32 keeps CPU logprobs closest to a trainer's recompute)."""
    device: str = "cpu"
    """torch device for the model, e.g. `cpu` or `cuda:0`."""
    max_batch_size: int = Field(default=8, ge=1)
    """Most requests decoded together in one batch."""
    batch_wait_ms: float = Field(default=5.0, ge=0)
    """How long the worker waits for more requests after the first before starting a batch."""
    max_context: int | None = None
    """Context window in tokens (prompt + completion); default: the model's max_position_embeddings."""
    threads: int | None = Field(default=None, ge=1)
    """torch CPU threads for this process (default: torch's choice, one per core)."""
    prefix_cache_mb: float | None = Field(default=None, ge=0)
    """Bytes (MiB) of finished requests' KV kept for prefix reuse across turns; 0 turns reuse
    off; default 1024 on CPU, 4096 on an accelerator."""
    continuous: bool = True
    """Requests that arrive while a batch decodes join it at the next step (False: they wait for
    the next batch)."""


_ALL: weakref.WeakSet[Engine] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    """At interpreter exit: every engine drops its requests and its worker is joined."""
    for engine in list(_ALL):
        engine.close(abandon=True, timeout=10.0)


class Engine(Batching, EngineBase):
    """A transformers causal LM in a worker thread, sampled in batches (see the module doc)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: Any,
        *,
        max_batch_size: int = 8,
        batch_wait_ms: float = 5.0,
        max_context: int | None = None,
        name: str = "model",
        prefix_cache_mb: float | None = None,
        continuous: bool = True,
    ) -> None:
        import torch

        from kwrl.llm.kv_cache import PrefixStore, reusable_layers, use_gqa_sdpa

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.max_batch_size = max_batch_size
        self.continuous = continuous
        self.batch_wait_s = batch_wait_ms / 1000.0
        self.max_context = max_context or int(
            getattr(model.config, "max_position_embeddings", 0) or 4096
        )
        self.device = next(model.parameters()).device
        if prefix_cache_mb is None:
            prefix_cache_mb = 1024 if self.device.type == "cpu" else 4096
        full_attention = reusable_layers(model.config)
        if not full_attention:
            prefix_cache_mb = 0
        # CPU decode reads the KV cache in place: measured there, not yet on accelerators.
        self._growing = full_attention and self.device.type == "cpu"
        use_gqa_sdpa(self.model)
        self._prefix = PrefixStore(int(prefix_cache_mb * 2**20))
        self._prefix_version = 0  # the weight version the stored KV belongs to
        self.weight_version = 0
        self.eos_ids = _eos_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else next(iter(self.eos_ids)))
        self._lock = threading.Lock()  # held for a whole batch and for a weight update
        self._stage_lock = threading.Lock()  # guards _staged
        self._staged = None
        self._queue = queue.Queue()
        self._seed_rng = torch.Generator().manual_seed(int(time.time_ns() % (1 << 62)))
        self._closed = False
        self._stop_seen = False  # the worker took close()'s sentinel while admitting
        self._updates_waiting = 0  # update_weights calls waiting for the batch lock
        self._inflight = []  # admitted to the running batch, not yet answered
        self.stats = {
            "batches": 0,
            "requests": 0,
            "completion_tokens": 0,
            "largest_batch": 0,
            "staged_updates": 0,
            "mid_batch_updates": 0,
            "prefill_tokens": 0,
            "prefix_hits": 0,
            "prefix_reused_tokens": 0,
            "joins": 0,
            "decode_steps": 0,
            "decode_rows": 0,
        }
        """Counters since start: batches, requests, tokens sampled, largest batch, staged weight
        updates applied, how many of those landed inside a running batch, prompt tokens forwarded
        by prefills (pads not counted), rows that reused a stored prefix, tokens so reused,
        requests that joined a running batch, decode steps, and rows over all decode steps
        (decode_rows / decode_steps: the mean batch a step ran)."""
        self._worker = threading.Thread(target=self._run, name=f"kwrl-engine-{name}", daemon=True)
        self._worker.start()
        _ALL.add(self)

    @classmethod
    def from_config(cls, cfg: EngineConfig) -> Engine:
        """Load `cfg.model` (packaged name, folder or hub id) with its tokenizer."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from kwrl.llm.packaged import resolve_model

        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        path = resolve_model(cfg.model)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, cfg.dtype))
        model.to(cfg.device)  # type: ignore[arg-type]
        return cls(
            model,
            tokenizer,
            max_batch_size=cfg.max_batch_size,
            batch_wait_ms=cfg.batch_wait_ms,
            max_context=cfg.max_context,
            name=cfg.model,
            prefix_cache_mb=cfg.prefix_cache_mb,
            continuous=cfg.continuous,
        )

    @classmethod
    def from_pretrained(cls, model: str = "smollm2-135m", **kwargs: Any) -> Engine:
        return cls.from_config(EngineConfig(model=model, **kwargs))

    # ---- requests -------------------------------------------------------------------------

    def submit(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> concurrent.futures.Future[EngineOutput]:
        """Queue one request; the future resolves to its `EngineOutput` (or a PolicyError)."""
        vocab = int(self.model.config.vocab_size)
        ids = self.check_prompt(f"engine {self.name}", prompt_ids, vocab, self._closed)
        fut = RequestFuture()
        fut.request = Request(ids, params, fut)
        self._queue.put(fut.request)
        return fut

    def abandon(self, fut: concurrent.futures.Future[EngineOutput]) -> None:
        """The caller of `fut` no longer wants it: a queued request is never started, a running
        one stops at its next token."""
        if not fut.cancel() and (req := getattr(fut, "request", None)) is not None:
            req.abandoned = True

    # ---- lifecycle -------------------------------------------------------------------------

    def close(self, *, abandon: bool = False, timeout: float = 60.0) -> None:
        """Stop the worker after the queued requests (`abandon`: drop them and the running ones
        instead); later submits raise."""
        if abandon:
            for r in [*self._inflight, *list(self._queue.queue)]:
                if r is not None and not r.future.cancel():
                    r.abandoned = True
        if self._closed:
            if abandon:
                self._worker.join(timeout=timeout)
            return
        self._closed = True
        self._queue.put(None)
        self._worker.join(timeout=timeout)
        with self._lock:  # nobody waits forever on an update staged as the engine closed
            self._apply_staged()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _eos_ids(model: PreTrainedModel, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    for src in (getattr(model, "generation_config", None), model.config):
        e = getattr(src, "eos_token_id", None) if src is not None else None
        if isinstance(e, int):
            ids.add(e)
        elif isinstance(e, list | tuple):
            ids.update(int(x) for x in e)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return frozenset(ids)
