"""The in-process engine: batched sampling from a transformers causal LM, with exact logprobs.

`Engine` owns one model in one worker thread. Callers submit token-id prompts from any thread or
event loop (`await engine.generate(ids, params)` or `engine.generate_sync`); the worker collects
requests for `batch_wait_ms`, left-pads them into one batch, prefills, then decodes step by step
with a KV cache, each row under its own sampling parameters and seed. Rows that finish are dropped
from the cache and answered at once, so a batch costs what its live rows cost.

Continuous batching (`continuous`, on by default): requests that arrive while a batch decodes join
it after the next decode step, up to `max_batch_size` rows: their prompts are prefilled (with
prefix reuse) and the batch cache is rebuilt, left-padded, around old and new rows. A decode step
on CPU costs about the same for 2 rows as for 8 (it is bound by reading the weights), so an agent
workload, whose next turns arrive one by one while other trials decode, runs fuller batches. A
weight update that waits for the batch (`update_weights`) stops admissions, so the batch drains.
`continuous=False` keeps static batches: a request that arrives mid-batch waits for the next one.

Contract of a result (`EngineOutput`): `token_ids` are exactly the sampled ids (EOS included when
sampled), `logprobs[i]` is the log-softmax of the temperature-scaled logits at the step that
sampled `token_ids[i]` (raw logits for greedy, temperature 0), so a fresh forward pass over
prompt + completion reproduces them: the TITO property the trainer relies on. top_p truncation is
applied when sampling but not folded into the logprob, as a trainer recomputes it. The finish
reason is STOP (EOS or a stop string), LENGTH (max_tokens) or CONTEXT (the context window ran out).

Weights change in two ways. `update_weights` / `load_weights` wait for the running batch, copy
tensors in place and bump `weight_version`. `stage_weights` (the disaggregated trainer's path, as
SkyRL's in-flight weight sync) never waits for a batch: the decode loop applies the staged tensors
between two decode steps, then re-prefills every live row (prompt + tokens so far) under the new
weights, so the next token's logprob is exactly what a fresh forward of the new model over that
prefix gives (the KV cache of the old weights is dropped, not reused). Each output carries the
version of every token (`token_versions`); its `weight_version` is the first token's (the oldest).

A caller that goes away (its coroutine is cancelled: an agent timeout, a cancelled trial) drops
its request: a queued one is never started, a running one stops at its next token
(`abandon(future)`; `generate` does it on cancellation). At interpreter exit every engine drops
what it runs and its worker is joined, so no thread is inside torch while the process ends (which
aborted it: exit 134).

Prefix reuse: the keys/values of prefilled prompts and of finished requests stay in an LRU
bounded by bytes (`prefix_cache_mb`, `kwrl.llm.kv_cache.PrefixStore`). A prompt that shares a
stored sequence's first tokens (an agent's next turn: previous prompt + completion + tool result;
another trial's first turn: the same system prompt and tools) forwards only its other tokens on
top of a copy of that KV; rows without a hit are prefilled together as before, then all rows are
left-padded into one batch cache. Every weight change empties the store first (KV of old weights
is never reused); models with sliding-window layers never use it. Reused KV was computed in
another batch, so logprobs can differ from a cold prefill by float rounding (~1e-6 in fp32).

On CPU, decode steps read the KV cache in place: layers append into buffers of doubling capacity
(`kwrl.llm.kv_cache.growing_layer_cls`; transformers' `DynamicLayer` concatenates the whole cache
every step) and grouped-query attention reads the shared key/value heads without repeating them
(`use_gqa_sdpa`; transformers copies the cache per layer and step whenever a mask is present).

Seeds: a request with a seed samples from its own generator, so it is reproducible for the same
weights and batch composition (padding can move logits by float rounding).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import queue
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.spec import live_spec

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

    from kwrl.llm.kv_cache import KV

_GREEDY_T = 1e-5
_MIN_REUSE = 32
"""Fewest stored tokens worth a row's own suffix forward instead of joining the batched prefill."""


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


@dataclass
class _Request:
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


class _Future(concurrent.futures.Future["EngineOutput"]):
    """The future `submit` returns; it knows its request, so `abandon` can find it."""

    request: _Request | None = None


_ALL: weakref.WeakSet[Engine] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    """At interpreter exit: every engine drops its requests and its worker is joined."""
    for engine in list(_ALL):
        engine.close(abandon=True, timeout=10.0)


class Engine:
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
        self._staged: _Staged | None = None
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._seed_rng = torch.Generator().manual_seed(int(time.time_ns() % (1 << 62)))
        self._closed = False
        self._stop_seen = False  # the worker took close()'s sentinel while admitting
        self._updates_waiting = 0  # update_weights calls waiting for the batch lock
        self._inflight: list[_Request] = []  # admitted to the running batch, not yet answered
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
        if self._closed:
            raise PolicyError(f"engine {self.name}: closed")
        if not prompt_ids:
            raise PolicyError(f"engine {self.name}: empty prompt (give at least one token id)")
        vocab = int(self.model.config.vocab_size)
        bad = [t for t in prompt_ids if not 0 <= t < vocab]
        if bad:
            raise PolicyError(
                f"engine {self.name}: prompt token ids out of range [0, {vocab}): {bad[:5]}"
            )
        fut = _Future()
        fut.request = _Request(list(prompt_ids), params, fut)
        self._queue.put(fut.request)
        return fut

    def abandon(self, fut: concurrent.futures.Future[EngineOutput]) -> None:
        """The caller of `fut` no longer wants it: a queued request is never started, a running
        one stops at its next token."""
        if not fut.cancel() and (req := getattr(fut, "request", None)) is not None:
            req.abandoned = True

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> EngineOutput:
        """Sample one completion of `prompt_ids`; concurrent calls are batched together. Cancelling
        the call abandons the request."""
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

    # ---- weights ---------------------------------------------------------------------------

    def _check_state(self, state_dict: Mapping[str, torch.Tensor], what: str) -> None:
        own = self.model.state_dict()
        unknown = [k for k in state_dict if k not in own]
        if unknown:
            raise ConfigError(f"{what}: unknown parameter names {unknown[:5]}")
        wrong = [k for k, v in state_dict.items() if tuple(v.shape) != tuple(own[k].shape)]
        if wrong:
            k = wrong[0]
            raise ConfigError(
                f"{what}: {k}: shape {tuple(state_dict[k].shape)} != {tuple(own[k].shape)}"
            )

    def _copy_in(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        import torch

        own = self.model.state_dict()
        with torch.no_grad():
            for k, v in state_dict.items():
                own[k].copy_(v.to(device=own[k].device, dtype=own[k].dtype))

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        """Copy `state_dict` (all or some parameters) into the model between batches.

        Returns the new `weight_version`. Unknown names or shape mismatches raise ConfigError
        before anything is copied.
        """
        self._check_state(state_dict, "update_weights")
        with self._stage_lock:
            self._updates_waiting += 1  # the running batch admits no more rows: it drains
        try:
            with self._lock:
                self._prefix.clear()  # first: a copy that fails halfway leaves mixed weights too
                self._copy_in(state_dict)
                self.weight_version += 1
                return self.weight_version
        finally:
            with self._stage_lock:
                self._updates_waiting -= 1

    def stage_weights(
        self, state_dict: Mapping[str, torch.Tensor], version: int | None = None
    ) -> concurrent.futures.Future[int]:
        """Apply `state_dict` at the next decode step of the running batch (or now, when idle).

        The future resolves to the new `weight_version` (`version` if given, else the current
        one + 1) once the tensors are in the model; the caller must not modify them before.
        Updates staged before one lands are merged (later tensors win, the last version wins).
        """
        self._check_state(state_dict, "stage_weights")
        fut: concurrent.futures.Future[int] = concurrent.futures.Future()
        with self._stage_lock:
            if self._staged is None:
                self._staged = _Staged({}, None, [])
            self._staged.tensors.update(state_dict)
            self._staged.version = version
            self._staged.futures.append(fut)
        # Idle engine: apply here. Busy: the decode loop (or the end of the batch) applies it.
        if self._lock.acquire(blocking=False):
            try:
                self._apply_staged()
            finally:
                self._lock.release()
        return fut

    def _apply_staged(self) -> bool:
        """Land the staged update; the caller holds `_lock`. False when nothing was staged."""
        with self._stage_lock:
            staged, self._staged = self._staged, None
        if staged is None:
            return False
        self._prefix.clear()
        try:
            self._copy_in(staged.tensors)
        except Exception as e:
            for f in staged.futures:
                f.set_exception(e)
            raise
        self.weight_version = (
            staged.version if staged.version is not None else self.weight_version + 1
        )
        self.stats["staged_updates"] += 1
        for f in staged.futures:
            f.set_result(self.weight_version)
        return True

    async def aupdate_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        return await asyncio.to_thread(self.update_weights, state_dict)

    def load_weights(self, path: Path | str) -> int:
        """Load a safetensors file, or every `*.safetensors` in a folder, into the model."""
        from safetensors.torch import load_file

        p = Path(path)
        files = sorted(p.glob("*.safetensors")) if p.is_dir() else [p]
        if not files or not all(f.is_file() for f in files):
            raise ConfigError(f"load_weights: {p}: no safetensors file found")
        state: dict[str, torch.Tensor] = {}
        for f in files:
            state.update(load_file(str(f)))
        own = self.model.state_dict()
        # Tied embeddings: a checkpoint may carry lm_head.weight that the model folds away.
        if "lm_head.weight" not in own:
            state.pop("lm_head.weight", None)
        return self.update_weights(state)

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

    # ---- worker ----------------------------------------------------------------------------

    def _run(self) -> None:
        import torch

        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.max_batch_size:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            live = [r for r in batch if r.future.set_running_or_notify_cancel()]
            if not live:
                continue
            while self._updates_waiting:  # a weight update waiting for the lock goes first
                time.sleep(0.001)
            self._inflight = list(live)
            try:
                with self._lock, torch.inference_mode():
                    self._generate_batch(live)
            except Exception as e:  # the batch fails as a whole; each caller sees why
                err = e if isinstance(e, PolicyError) else PolicyError(f"engine {self.name}: {e!r}")
                for r in self._inflight:  # rows that joined mid-batch too
                    if not r.future.done():
                        r.future.set_exception(err)
            self._inflight = []
            if self._staged is not None:  # staged while the batch ended: land it now
                with self._lock:
                    self._apply_staged()
            stop = stop or self._stop_seen

    def _generate_batch(self, reqs: list[_Request]) -> None:
        for r in reqs:
            self._start(r)
        active = [r for r in reqs if r.finish is None]
        for r in reqs:
            if r.finish is not None:
                self._deliver(r)
        self.stats["batches"] += 1
        if active:
            self._decode(active)

    def _start(self, r: _Request) -> None:
        """Set a request's token limit and generator (finished at once when there is no room)."""
        import torch

        room = self.max_context - len(r.prompt_ids)
        r.limit = min(r.params.max_tokens, max(room, 0))
        r.limit_is_context = room < r.params.max_tokens
        # A seeded request samples alone from its own generator (reproducible whatever the
        # batch); the others sample together on the device from the batch's generator.
        r.generator = (
            torch.Generator().manual_seed(r.params.seed) if r.params.seed is not None else None
        )
        if r.limit <= 0:
            r.finish = FinishReason.CONTEXT if r.limit_is_context else FinishReason.LENGTH

    def _deliver(self, r: _Request) -> None:
        """Answer a finished request (its caller goes on while the batch decodes the others)."""
        self.stats["requests"] += 1
        self.stats["completion_tokens"] += len(r.token_ids)
        r.future.set_result(
            EngineOutput(
                token_ids=r.token_ids,
                logprobs=r.logprobs,
                text=r.text if r.text is not None else self._decode_text(r.token_ids),
                finish_reason=r.finish or FinishReason.LENGTH,
                prompt_tokens=len(r.prompt_ids),
                weight_version=r.versions[0] if r.versions else self.weight_version,
                token_versions=r.versions,
            )
        )

    def _admit(self, n_live: int) -> list[_Request]:
        """Queued requests that join the running batch now (none when static, when a weight
        update waits for the batch, or once close() was seen)."""
        if not self.continuous or self._updates_waiting or self._stop_seen:
            return []
        new: list[_Request] = []
        while n_live + len(new) < self.max_batch_size:
            try:
                r = self._queue.get_nowait()
            except queue.Empty:
                break
            if r is None:
                self._stop_seen = True
                break
            if not r.future.set_running_or_notify_cancel():
                continue
            self._inflight.append(r)
            self._start(r)
            if r.finish is not None:
                self._deliver(r)
            else:
                new.append(r)
        return new

    def _join(
        self, rows: list[_Request], logits_B_V: torch.Tensor, cache: Any, mask: torch.Tensor,
        new: list[_Request],
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:  # fmt: skip
        """Prefill `new` and rebuild the batch around the running `rows` and them: (logits_B_V,
        cache, mask_B_W, next_pos_B_1) of `rows + new`, in that order."""
        import torch

        from kwrl.llm.kv_cache import assemble, row_kv

        lens = mask.sum(-1).tolist()  # left padding: each row's valid positions are its last
        kv_rows = [row_kv(cache, i, n, copy=False) for i, n in enumerate(lens)]
        new_logits, new_kv = self._row_states(new)
        cache, mask, next_pos = assemble(
            self.model.config, kv_rows + new_kv, self.device, growing=self._growing
        )
        self.stats["joins"] += len(new)
        return torch.cat([logits_B_V, torch.stack(new_logits)]), cache, mask, next_pos

    def _prefill(
        self, rows: list[_Request]
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Forward every row's prompt + tokens so far into a KV cache: (logits_B_V, cache,
        mask_B_W, next_pos_B_1). Rows that start with a stored prefix forward only the rest."""
        import torch

        from kwrl.llm.kv_cache import assemble, row_kv

        seqs = [r.prompt_ids + r.token_ids for r in rows]
        hits = self._prefix_hits(seqs)
        if all(h is None for h in hits):
            out = self._forward_padded(seqs)
            self._store_prompts(
                seqs, [row_kv(out[1], i, len(s), copy=False) for i, s in enumerate(seqs)]
            )
            return out
        logits, kv_rows = self._row_states(rows, hits)
        cache, mask, next_pos = assemble(
            self.model.config, kv_rows, self.device, growing=self._growing
        )
        return torch.stack(logits), cache, mask, next_pos

    def _row_states(
        self, rows: list[_Request], hits: list[tuple[Any, int] | None] | None = None
    ) -> tuple[list[torch.Tensor], list[KV]]:
        """Forward every row's prompt + tokens so far: per row, the next token's logits and the
        KV of those positions. Rows without a stored prefix (`hits`, looked up when None) are
        prefilled together, padded."""
        from kwrl.llm.kv_cache import row_kv

        seqs = [r.prompt_ids + r.token_ids for r in rows]
        if hits is None:
            hits = self._prefix_hits(seqs)
        miss = [i for i, h in enumerate(hits) if h is None]
        kv_rows: list[KV] = [[] for _ in rows]
        logits: list[torch.Tensor] = [None] * len(rows)  # type: ignore[list-item]
        if miss:
            lg, cache, _, _ = self._forward_padded([seqs[i] for i in miss])
            for j, i in enumerate(miss):
                kv_rows[i] = row_kv(cache, j, len(seqs[i]), copy=False)
                logits[i] = lg[j]
        for i, hit in enumerate(hits):
            if hit is not None:
                logits[i], kv_rows[i] = self._forward_suffix(seqs[i], *hit)
        self._store_prompts(seqs, kv_rows)
        return logits, kv_rows

    def _store_prompts(self, seqs: list[list[int]], kv_rows: list[KV]) -> None:
        """Keep copies of freshly prefilled rows' KV: a request that arrives before these finish
        (another trial's first turn: the same system prompt and tools) reuses it. A row's entry
        gives way to its full sequence when it finishes (`_store_finished`)."""
        if not self._prefix.max_bytes or self._prefix_version != self.weight_version:
            return
        for seq, kv in zip(seqs, kv_rows, strict=True):
            if len(seq) > _MIN_REUSE:
                self._prefix.put(seq, [(k.clone(), v.clone()) for k, v in kv])

    def _prefix_hits(self, seqs: list[list[int]]) -> list[tuple[Any, int] | None]:
        """Per row, the stored KV to reuse and how many tokens of it (None: prefill cold)."""
        if self._prefix_version != self.weight_version:  # belt and braces: clear() ran already
            self._prefix.clear()
            self._prefix_version = self.weight_version
        if not self._prefix.max_bytes:
            return [None] * len(seqs)
        hits: list[tuple[Any, int] | None] = []
        for seq in seqs:
            hit = self._prefix.lookup(seq, _MIN_REUSE) if len(seq) > _MIN_REUSE else None
            # Forward at least the last token: its logits sample the next one.
            hits.append(None if hit is None else (hit[0], min(hit[1], len(seq) - 1)))
        return hits

    def _forward_padded(
        self, seqs: list[list[int]]
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Left-pad `seqs` into one batch and forward it into a fresh KV cache."""
        import torch

        from kwrl.llm.kv_cache import new_cache

        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, seq in enumerate(seqs):
            ids[i, width - len(seq) :] = torch.tensor(seq)
            mask[i, width - len(seq) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = new_cache(self.model.config, growing=self._growing)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.stats["prefill_tokens"] += sum(len(s) for s in seqs)
        return out.logits[:, -1, :], cache, mask, pos[:, -1:] + 1

    def _forward_suffix(self, seq: list[int], kv: Any, n: int) -> tuple[torch.Tensor, Any]:
        """Forward `seq[n:]` on top of the stored KV of `seq[:n]`: (logits_V, the row's KV)."""
        import torch

        from kwrl.llm.kv_cache import cache_from

        prefix = [(k[None, :, :n], v[None, :, :n]) for k, v in kv]
        cache = cache_from(self.model.config, prefix, growing=self._growing)
        ids = torch.tensor([seq[n:]], device=self.device)
        out = self.model(
            input_ids=ids,
            attention_mask=torch.ones((1, len(seq)), dtype=torch.long, device=self.device),
            position_ids=torch.arange(n, len(seq), device=self.device)[None],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.stats["prefill_tokens"] += len(seq) - n
        self.stats["prefix_hits"] += 1
        self.stats["prefix_reused_tokens"] += n
        return out.logits[0, -1, :], [(layer.keys[0], layer.values[0]) for layer in cache.layers]

    def _store_finished(self, rows: list[_Request], idx: list[int], cache: Any, mask: Any) -> None:
        """Keep the KV of rows `idx` (prompt + tokens but the last, never forwarded) for reuse."""
        from kwrl.llm.kv_cache import row_kv

        if not self._prefix.max_bytes or self._prefix_version != self.weight_version:
            return
        lens = mask[idx].sum(-1).tolist()
        for i, n in zip(idx, lens, strict=True):
            r = rows[i]
            ids = r.prompt_ids + r.token_ids[:-1]
            if n == len(ids):
                self._prefix.put(ids, row_kv(cache, i, n))

    def _decode(self, rows: list[_Request]) -> None:
        import torch

        dev = self.device

        def temperatures(rows: list[_Request]) -> torch.Tensor:
            return torch.tensor(
                [r.params.temperature if r.params.temperature > _GREEDY_T else 1.0 for r in rows],
                device=dev,
            )

        temps = temperatures(rows)
        seed = int(torch.randint(0, 1 << 62, (1,), generator=self._seed_rng))
        batch_gen = torch.Generator(device=dev).manual_seed(seed)
        logits_B_V, cache, mask, next_pos = self._prefill(rows)
        while True:
            self.stats["largest_batch"] = max(self.stats["largest_batch"], len(rows))
            logp = torch.log_softmax(logits_B_V.float() / temps[:, None], dim=-1)
            picked, picked_lp = self._sample_rows(rows, logp, batch_gen)
            for r, tok, lp in zip(rows, picked, picked_lp, strict=True):
                r.token_ids.append(tok)
                r.logprobs.append(lp)
                r.versions.append(self.weight_version)
                self._check_finish(r)
            keep = [i for i, r in enumerate(rows) if r.finish is None]
            if len(keep) < len(rows):
                done = [i for i, r in enumerate(rows) if r.finish is not None]
                self._store_finished(rows, done, cache, mask)  # before the caller's next turn
                for i in done:
                    self._deliver(rows[i])
            if not keep:
                return
            tok_col = torch.tensor([[picked[i]] for i in keep], device=dev)
            if len(keep) < len(rows):
                sel = torch.tensor(keep, device=dev)
                cache.batch_select_indices(sel)
                mask, next_pos, temps = mask[sel], next_pos[sel], temps[sel]
                rows = [rows[i] for i in keep]
            if self._staged is not None and self._apply_staged():
                # New weights: the old KV cache is theirs no more; recompute it over the prefix.
                self.stats["mid_batch_updates"] += 1
                logits_B_V, cache, mask, next_pos = self._prefill(rows)
                continue
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            out = self.model(
                input_ids=tok_col,
                attention_mask=mask,
                position_ids=next_pos,
                past_key_values=cache,
                use_cache=True,
            )
            self.stats["decode_steps"] += 1
            self.stats["decode_rows"] += len(rows)
            logits_B_V = out.logits[:, -1, :]
            next_pos = next_pos + 1
            new = self._admit(len(rows))
            if new:  # the cache holds every row's tokens so far: a clean point to join
                logits_B_V, cache, mask, next_pos = self._join(rows, logits_B_V, cache, mask, new)
                rows = rows + new
                temps = temperatures(rows)

    def _sample_rows(
        self, rows: list[_Request], logp_B_V: torch.Tensor, batch_gen: torch.Generator
    ) -> tuple[list[int], list[float]]:
        """One token per row and its logprob, with one device->host copy for the whole batch.

        Greedy rows take the argmax; unseeded sampling rows draw together on the device (top_p
        per row) from `batch_gen`; seeded rows draw one by one from their own generators.
        """
        import torch

        dev = logp_B_V.device
        picked = torch.argmax(logp_B_V, dim=-1)
        batched = [
            i
            for i, r in enumerate(rows)
            if r.params.temperature > _GREEDY_T and r.generator is None
        ]
        if batched:
            sel = torch.tensor(batched, device=dev)
            probs = logp_B_V.index_select(0, sel).exp()
            top_p = torch.tensor([rows[i].params.top_p for i in batched], device=dev)
            if bool((top_p < 1.0).any()):
                sorted_p, order = torch.sort(probs, dim=-1, descending=True)
                drop = sorted_p.cumsum(-1) - sorted_p > top_p[:, None]
                probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p.masked_fill(drop, 0))
            drawn = torch.multinomial(probs, 1, generator=batch_gen).squeeze(-1)
            picked = picked.index_copy(0, sel, drawn)
        for i, r in enumerate(rows):
            if r.params.temperature > _GREEDY_T and r.generator is not None:
                picked[i] = self._sample(r, logp_B_V[i])
        lps = logp_B_V.gather(-1, picked[:, None]).squeeze(-1)
        return [int(t) for t in picked.tolist()], [float(x) for x in lps.tolist()]

    def _sample(self, r: _Request, logp_V: torch.Tensor) -> int:
        import torch

        if r.params.temperature <= _GREEDY_T:
            return int(torch.argmax(logp_V))
        probs = logp_V.exp().cpu()
        if r.params.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            drop = sorted_p.cumsum(0) - sorted_p > r.params.top_p
            sorted_p[drop] = 0.0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
        return int(torch.multinomial(probs, 1, generator=r.generator))

    def _check_finish(self, r: _Request) -> None:
        if r.abandoned:
            r.finish = FinishReason.LENGTH
        elif r.token_ids[-1] in self.eos_ids:
            r.finish = FinishReason.STOP
        elif r.params.stop:
            text = self._decode_text(r.token_ids)
            hits = [i for s in r.params.stop if (i := text.find(s)) >= 0]
            if hits:
                r.finish = FinishReason.STOP
                r.text = text[: min(hits)]
                return
        if r.finish is None and len(r.token_ids) >= r.limit:
            r.finish = FinishReason.CONTEXT if r.limit_is_context else FinishReason.LENGTH

    def _decode_text(self, token_ids: list[int]) -> str:
        return str(self.tokenizer.decode(token_ids, skip_special_tokens=True))


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def shared_engine(cfg: EngineConfig) -> Engine:
    """One engine per distinct config in this process."""
    key = cfg.model_dump_json()
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = Engine.from_config(cfg)
        return _ENGINES[key]


_LIVE: dict[str, Any] = {}


def register_engine(handle: str, engine: Any) -> str:
    """Make `engine` (an `Engine`, or a `VLLMEngine`) the policy `live:HANDLE` in this process, the
    way a trainer hands the engine it pushes weights into to its trials' agents; returns that
    spec. A handle holds one engine: registering another under it is an error."""
    with _ENGINES_LOCK:
        if _LIVE.setdefault(handle, engine) is not engine:
            raise ConfigError(f"engine handle {handle!r}: another engine is registered under it")
    return live_spec(handle)


def unregister_engine(handle: str) -> None:
    """Forget `handle` (the engine itself stays loaded while anyone holds it)."""
    with _ENGINES_LOCK:
        _LIVE.pop(handle, None)


def live_engine(handle: str) -> Any:
    """The engine registered under `handle`; none is a `PolicyError` (never a second model)."""
    with _ENGINES_LOCK:
        engine = _LIVE.get(handle)
        known = sorted(_LIVE)
    if engine is None:
        raise PolicyError(
            f"policy {live_spec(handle)}: no engine is registered under {handle!r} in this process "
            f"(registered: {', '.join(known) or 'none'}; kwrl.llm.engine.register_engine)"
        )
    return engine


@dataclass
class _Staged:
    tensors: dict[str, Any]
    version: int | None
    futures: list[concurrent.futures.Future[int]]


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
