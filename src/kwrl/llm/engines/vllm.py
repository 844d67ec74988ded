"""vLLM as kwrl's rollout engine on a GPU: `VLLMEngine`, the engine of the `vllm:MODEL` policy kind.

`VLLMEngine` implements `SamplingEngine` (`kwrl.llm.engines.base`), so `EngineClient`'s token and
chat paths, the agent and `kwrl train` use it as they use the in-process `Engine`. Inside, one worker thread owns a vLLM `LLMEngine` built in this
process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`: no engine-core process, the model lives beside the
learner on the same GPU) and runs the continuous-batching loop: it admits queued requests with
`add_request`, calls `step()` while any are unfinished, answers each finished one at once, and runs
queued weight updates between two steps. A cancelled `generate` (an agent timeout) abandons its
request: never added when still queued, else `abort_request` before the next step frees its batch
row; a result or error for a cancelled request is dropped (setting it raised in the worker thread,
which then died and left every later request waiting forever).

Contract of a result (the same `EngineOutput` as the in-process engine's): `token_ids` are vLLM's
sampled ids, `logprobs[i]` the logprob vLLM reports for `token_ids[i]` (`logprobs=0`, the sampled
token only) under `logprobs_mode = "processed_logprobs"` (after temperature, as the learner
recomputes; with top_p < 1 vLLM folds the truncation in, the in-process engine does not), the text
decoded without special tokens, and the finish reason STOP (EOS or a stop string), LENGTH
(max_tokens) or CONTEXT (the prompt left less room than max_tokens and that room ran out).

Weights: `update_weights(state_dict)` hands the learner's tensors (Hugging Face names, any device
or dtype) to vLLM's own `reload_weights` on its worker (`collective_rpc`), which maps the names
onto vLLM's fused layers (q/k/v into qkv_proj, gate/up into gate_up_proj, a tied lm_head
skipped), then empties the prefix cache (KV of the old weights is never reused) and bumps
`weight_version`. An update waits for nothing: it lands between two engine steps, so requests in
flight go on under the new weights (each result keeps the version it started with).
`stage_weights` queues the same update and returns its future without waiting for it.

vLLM is imported only when an engine is built; `kwrl[gpu]` pins it (docs/gpu.md).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engines.base import EngineBase, EngineOutput

if TYPE_CHECKING:
    import torch


class VLLMConfig(KwrlConfig):
    """How the in-process vLLM engine (policy kind `vllm`) loads and runs a model."""

    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "bfloat16"
    """Weights and compute dtype (vLLM's fast attention kernels take 16-bit only)."""
    gpu_memory_utilization: float = Field(default=0.35, gt=0, le=1)
    """Share of the GPU's memory vLLM may take (weights, activations, KV cache); the rest is
    the learner's when both share a GPU."""
    max_model_len: int | None = Field(default=None, ge=1)
    """Context window in tokens (prompt + completion); default: the model's."""
    max_num_seqs: int = Field(default=256, ge=1)
    """Most sequences decoded together in one step."""
    enforce_eager: bool = False
    """Skip torch.compile and CUDA graphs (starts in seconds, decodes several times slower)."""
    enable_prefix_caching: bool = True
    """Reuse the KV of shared prompt prefixes (an agent's next turn, a shared system prompt)."""
    seed: int = 0
    """vLLM's engine seed (a request's own `seed` still wins)."""
    weight_api: Literal["reload_weights", "load_weights"] = "reload_weights"
    """How pushed weights land: vLLM's worker `reload_weights` (layerwise reload, its RL path) or
    the model's own `load_weights` called in place through `apply_model`."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further `vllm.EngineArgs` fields, e.g. {"attention_backend": "TRITON_ATTN"}."""


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    future: concurrent.futures.Future[EngineOutput]
    version: int = 0
    limit_is_context: bool = False


@dataclass
class _Job:
    fn: Callable[[], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)


def engine_args(model: str, cfg: VLLMConfig) -> dict[str, Any]:
    """`vllm.EngineArgs` keywords for `model` under `cfg` (checked without vLLM installed)."""
    args: dict[str, Any] = {
        "model": model,
        "tokenizer": model,
        "dtype": cfg.dtype,
        "gpu_memory_utilization": cfg.gpu_memory_utilization,
        "max_num_seqs": cfg.max_num_seqs,
        "enforce_eager": cfg.enforce_eager,
        "enable_prefix_caching": cfg.enable_prefix_caching,
        "seed": cfg.seed,
        "logprobs_mode": "processed_logprobs",
        "max_logprobs": 1,
        "disable_log_stats": True,
    }
    if cfg.max_model_len is not None:
        args["max_model_len"] = cfg.max_model_len
    clash = sorted(set(cfg.extra) & {"model", "tokenizer", "logprobs_mode"})
    if clash:
        raise ConfigError(f"vllm.extra: {clash} are set by kwrl; drop them")
    args.update(cfg.extra)
    return args


def vllm_sampling(params: SamplingParams, limit: int, stop_ids: list[int]) -> dict[str, Any]:
    """`vllm.SamplingParams` keywords for kwrl's `params` with at most `limit` new tokens."""
    out: dict[str, Any] = {
        "max_tokens": limit,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "logprobs": 0,
        "stop_token_ids": stop_ids,
        "skip_special_tokens": True,
    }
    if params.stop:
        out["stop"] = list(params.stop)
    if params.seed is not None:
        out["seed"] = params.seed
    return out


def finish_reason(vllm_reason: str | None, limit_is_context: bool) -> FinishReason:
    """vLLM's `finish_reason` ("stop", "length", "abort", ...) as kwrl's."""
    if vllm_reason == "length":
        return FinishReason.CONTEXT if limit_is_context else FinishReason.LENGTH
    if vllm_reason == "stop":
        return FinishReason.STOP
    raise PolicyError(f"vllm: request ended with finish_reason {vllm_reason!r}")


def sampled_logprobs(token_ids: list[int], logprobs: Any) -> list[float]:
    """The logprob of each sampled token from vLLM's per-position logprobs (dicts or flat)."""
    if logprobs is None or len(logprobs) != len(token_ids):
        got = None if logprobs is None else len(logprobs)
        raise PolicyError(f"vllm: {got} logprob positions for {len(token_ids)} tokens")
    return [float(logprobs[i][t].logprob) for i, t in enumerate(token_ids)]


class VLLMEngine(EngineBase):
    """vLLM's `LLMEngine` in this process behind the in-process engine's API (module doc)."""

    def __init__(self, model: str, cfg: VLLMConfig, *, name: str | None = None) -> None:
        from transformers import AutoTokenizer

        from kwrl.llm.packaged import resolve_model

        self.path = resolve_model(model)
        self.cfg = cfg
        self.name = name or model
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.weight_version = 0
        self._queue: queue.Queue[_Request | _Job | None] = queue.Queue()
        self._ids = itertools.count()
        self._closed = False
        self.stats = {"requests": 0, "completion_tokens": 0, "steps": 0, "weight_updates": 0}
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._worker = threading.Thread(
            target=self._run, args=(started,), name=f"kwrl-vllm-{self.name}", daemon=True
        )
        self._worker.start()
        started.result()  # raises what building the engine raised

    @property
    def device(self) -> torch.device:
        import torch

        return torch.device("cuda", torch.cuda.current_device())

    # ---- requests -------------------------------------------------------------------------

    def submit(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> concurrent.futures.Future[EngineOutput]:
        what = f"vllm engine {self.name}"
        ids = self.check_prompt(what, prompt_ids, self.vocab_size, self._closed)
        fut: concurrent.futures.Future[EngineOutput] = concurrent.futures.Future()
        self._queue.put(_Request(ids, params, fut))
        return fut

    # ---- weights ---------------------------------------------------------------------------

    def _queue_job(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run `fn` on the worker thread between two engine steps; the future of its result."""
        if self._closed:
            raise PolicyError(f"vllm engine {self.name}: closed")
        job = _Job(fn)
        self._queue.put(job)
        return job.future

    def _call(self, fn: Callable[[], Any]) -> Any:
        return self._queue_job(fn).result()

    def _weights_job(
        self, state_dict: Mapping[str, torch.Tensor], version: int | None
    ) -> Callable[[], int]:
        items = [(k, v.detach()) for k, v in state_dict.items()]

        def load() -> int:
            if self.cfg.weight_api == "reload_weights":
                self._llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(items)})
            else:
                self._llm.apply_model(lambda m: m.load_weights(iter(items)))
            self._llm.reset_prefix_cache()
            self.weight_version = version if version is not None else self.weight_version + 1
            self.stats["weight_updates"] += 1
            return self.weight_version

        return load

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        """Load `state_dict` (Hugging Face names) through vLLM's `reload_weights`; new version."""
        return int(self._call(self._weights_job(state_dict, None)))

    def stage_weights(
        self, state_dict: Mapping[str, torch.Tensor], version: int | None = None
    ) -> concurrent.futures.Future[int]:
        """As `update_weights`, without waiting: the future resolves to the new version (`version`
        if given) once the update landed between two engine steps. The caller must not modify
        the tensors before."""
        return self._queue_job(self._weights_job(state_dict, version))

    def load_weights(self, path: Path | str) -> int:
        """Reload every weight from a model folder (e.g. a checkpoint's model/); new version."""
        from kwrl.llm.packaged import resolve_model

        folder = resolve_model(str(path))

        def load() -> int:
            self._llm.collective_rpc("reload_weights", kwargs={"weights_path": folder})
            self._llm.reset_prefix_cache()
            self.weight_version += 1
            return self.weight_version

        return int(self._call(load))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._worker.join(timeout=60)

    # ---- worker ----------------------------------------------------------------------------

    def _build(self) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the model stays in this process
        from vllm import EngineArgs  # pyright: ignore[reportMissingImports]
        from vllm.v1.engine.llm_engine import LLMEngine  # pyright: ignore[reportMissingImports]

        self._llm = LLMEngine.from_engine_args(EngineArgs(**engine_args(self.path, self.cfg)))
        mc = self._llm.model_config
        self.max_context = int(mc.max_model_len)
        self.vocab_size = int(mc.get_vocab_size())
        hf = mc.hf_config
        eos: set[int] = set()
        for src in (getattr(self.tokenizer, "eos_token_id", None), hf.eos_token_id):
            if isinstance(src, int):
                eos.add(src)
            elif isinstance(src, list | tuple):
                eos.update(int(x) for x in src)
        self.eos_ids = sorted(eos)

    def _admit(self, r: _Request, live: dict[str, _Request]) -> None:
        from vllm import SamplingParams as VSP  # pyright: ignore[reportMissingImports]

        room = self.max_context - len(r.prompt_ids)
        limit = min(r.params.max_tokens, room)
        r.limit_is_context = room < r.params.max_tokens
        r.version = self.weight_version
        if limit <= 0:
            reason = FinishReason.CONTEXT if r.limit_is_context else FinishReason.LENGTH
            out = EngineOutput([], [], "", reason, len(r.prompt_ids), r.version, [])
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                r.future.set_result(out)
            return
        rid = f"kwrl-{next(self._ids)}"
        sp = VSP(**vllm_sampling(r.params, limit, self.eos_ids))
        self._llm.add_request(rid, {"type": "token", "prompt_token_ids": r.prompt_ids}, sp)
        live[rid] = r

    def _answer(self, out: Any, r: _Request) -> None:
        c = out.outputs[0]
        ids = [int(t) for t in c.token_ids]
        result = EngineOutput(
            token_ids=ids,
            logprobs=sampled_logprobs(ids, c.logprobs),
            text=c.text,
            finish_reason=finish_reason(c.finish_reason, r.limit_is_context),
            prompt_tokens=len(r.prompt_ids),
            weight_version=r.version,
            token_versions=[r.version] * len(ids),
        )
        self.stats["requests"] += 1
        self.stats["completion_tokens"] += len(ids)
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
            r.future.set_result(result)

    def _run(self, started: concurrent.futures.Future[None]) -> None:
        try:
            self._build()
        except BaseException as e:
            started.set_exception(e)
            return
        started.set_result(None)
        live: dict[str, _Request] = {}
        stop = False
        while not stop or live:
            # Block for work only when nothing is decoding; else take what queued meanwhile.
            items: list[_Request | _Job | None] = []
            if not live and not stop:
                items.append(self._queue.get())
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for it in items:
                if it is None:
                    stop = True
                elif isinstance(it, _Job):
                    try:
                        it.future.set_result(it.fn())
                    except BaseException as e:
                        it.future.set_exception(e)
                elif stop:
                    _fail(it.future, PolicyError(f"vllm engine {self.name}: closed"))
                elif not it.future.cancelled():  # abandoned while queued: never added
                    try:
                        self._admit(it, live)
                    except BaseException as e:
                        _fail(it.future, PolicyError(f"vllm engine {self.name}: {e}"))
            abandoned = [rid for rid, r in live.items() if r.future.cancelled()]
            if abandoned:  # their callers are gone (cancelled): free their batch rows
                self._llm.abort_request(abandoned)
                for rid in abandoned:
                    del live[rid]
            if not live:
                continue
            try:
                outs = self._llm.step()
            except BaseException as e:  # the engine is broken: fail everything waiting
                for r in live.values():
                    _fail(r.future, PolicyError(f"vllm engine {self.name}: {e!r}"))
                live.clear()
                continue
            self.stats["steps"] += 1
            for out in outs:
                if out.finished and out.request_id in live:
                    r = live.pop(out.request_id)
                    try:
                        self._answer(out, r)
                    except BaseException as e:
                        _fail(r.future, e)


def _fail(fut: concurrent.futures.Future[Any], error: BaseException) -> None:
    """`fut` fails with `error`, unless its caller cancelled it meanwhile (a cancelled future
    refuses a result: raising here would end the worker thread and hang every later request)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        fut.set_exception(error)
