"""Disaggregated mode of the single-machine trainer: generation workers and the learner in
separate processes (`rl.mode = "disaggregated"`).

    trainer process (rank 0)                       worker process k (rank k, 1..N)
      PromptSampler, Learner on learner.device       Engine on generation_devices[k-1]
      dispatch(step, task ids, min_version) ──────►  wait until engine runs >= min_version
                                                     run_rollout(shard): harbor trials,
                                                     KwrlAgent, policy engine:<model>
      ◄────────────────────── trajectories, causes
      learn -> WeightSender.broadcast(v) ══════════► WeightReceiver: stage_weights(v), landing
                                                     between two decode steps of in-flight trials

The rollout path in a worker is the real one (the same `RolloutConfig` as the in-process modes);
only where it runs changes. Each batch's groups (tasks) are split across the workers, so N workers
share one batch. Control messages (requests, trajectories) travel over multiprocessing queues;
weights over torch.distributed (`weight_sync`: NCCL between distinct GPUs, else gloo through
host memory).

Staleness, bounded as in async mode: the batch for step s is dispatched only once the learner has
pushed version >= s - 1 - max_staleness, and its workers wait until their engines run at least the
version pushed at dispatch, so at training time (learner version s - 1) every token of the batch
was sampled by a version >= s - 1 - max_staleness. The drop rule of async mode still runs as a
guard (`stale_dropped` stays 0). A batch's `version` is the oldest weight version of any of its
policy turns (the agent records each turn's in `turn_stats`: its first token's, the turn's oldest),
or the version the worker waited for when no turn ran; it is never below that one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import shutil
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwrl.errors import TrainError
from kwrl.rollout.trial import read_trial
from kwrl.tasks.taskdir import task_dirs
from kwrl.train.batch import Trajectory, trajectories_from_records
from kwrl.train.local.config import TrainConfig
from kwrl.train.local.sampler import SamplerState
from kwrl.train.local.trainer import RLTrainer, SampledBatch
from kwrl.train.local.weight_sync import (
    Backend,
    WeightReceiver,
    WeightSender,
    choose_backend,
    close_groups,
    free_port,
    init_groups,
)

if TYPE_CHECKING:
    from kwrl.rollout.runner import RolloutSummary


@dataclass
class ShardRequest:
    step_hint: int
    task_ids: list[str]
    min_version: int


@dataclass
class ShardResult:
    step_hint: int
    rank: int
    version: int = 0
    trajectories: list[Trajectory] = field(default_factory=list)
    summary: RolloutSummary | None = None
    """The shard's rollout (`kwrl.rollout.runner.RolloutResult.summary`); None: none ran."""
    sync: dict[str, Any] | None = None
    """The worker's weight receiver's last applied versions and its engine's mid-batch updates."""
    error: str | None = None


@dataclass
class _Pending:
    step_hint: int
    task_ids: list[str]
    sampler_after: SamplerState
    ranks: list[int]
    results: dict[int, ShardResult] = field(default_factory=dict)


# ---------------------------------------------------------------------------- worker process


def rollout_shard(
    cfg: TrainConfig, tasks: dict[str, Path], req: ShardRequest, policy_dir: Path, out: Path,
    version: int,
) -> tuple[list[Trajectory], RolloutSummary, int]:  # fmt: skip
    """One shard of a batch through harbor trials, as `RLTrainer.sample` runs a whole batch: its
    trajectories, its rollout's summary, and the oldest weight version that sampled one of its
    turns (`version` where none did)."""
    from kwrl.rollout.runner import run_rollout

    rcfg = cfg.rollout_config(policy_dir, WORKER_ENGINE)
    if out.exists():  # left by a killed run: never reuse its trials
        shutil.rmtree(out)
    result = asyncio.run(run_rollout([tasks[i] for i in req.task_ids], rcfg, out))
    files = [read_trial(r.trial_dir) for r in result.records]
    oldest = min((v for f in files for v in f.turn_versions), default=version)
    return trajectories_from_records(result.records, oldest, files), result.summary, oldest


WORKER_ENGINE = "generation-worker"
"""Handle of a worker process's engine: its trials' agents sample from `live:generation-worker`."""


def worker_main(
    rank: int, world_size: int, cfg_json: dict[str, Any], policy_dir: str, version: int,
    port: int, backend: Backend, requests: Any, results: Any,
) -> None:  # fmt: skip
    """A generation worker: engine + weight receiver + rollouts of the shards it is sent."""
    import torch

    from kwrl.llm.engines import register_engine, shared_engine

    cfg = TrainConfig.model_validate(cfg_json)
    dcfg = cfg.disaggregated
    device = dcfg.generation_devices[rank - 1]
    if dcfg.worker_threads is not None:
        torch.set_num_threads(dcfg.worker_threads)
    groups = init_groups(rank, world_size, port, backend, device)
    engine_cfg = cfg.engine.model_copy(update={"device": device, "threads": dcfg.worker_threads})
    engine = shared_engine(engine_cfg.model_copy(update={"model": policy_dir}))
    engine.weight_version = version
    register_engine(WORKER_ENGINE, engine)
    receiver = WeightReceiver(engine, groups).start()
    tasks = {p.name: p for p in task_dirs(cfg.dataset, cfg.tasks)}
    results.put(ShardResult(step_hint=0, rank=rank, version=version))  # ready
    try:
        while (req := requests.get()) is not None:
            res = ShardResult(req.step_hint, rank)
            try:
                res.version = receiver.wait_version(req.min_version, timeout=dcfg.start_timeout_s)
                out = cfg.out / "rollouts" / f"batch-{req.step_hint:06d}" / f"w{rank}"
                res.trajectories, res.summary, res.version = rollout_shard(
                    cfg, tasks, req, Path(policy_dir), out, res.version
                )
                res.sync = {
                    "applied": receiver.stats.applied[-3:],
                    "mid_batch_updates": engine.stats["mid_batch_updates"],
                }
            except Exception:
                res.error = traceback.format_exc()
            results.put(res)
        receiver.join(timeout=60)
    finally:
        engine.close()
        close_groups()


# ---------------------------------------------------------------------------- trainer process


def _run_into[T](fut: concurrent.futures.Future[T], fn: Callable[[], T]) -> None:
    try:
        fut.set_result(fn())
    except BaseException as e:
        fut.set_exception(e)


class DisaggregatedTrainer(RLTrainer):
    """`RLTrainer` whose engines live in worker processes (see the module doc)."""

    def __init__(self, cfg: TrainConfig, **kwargs: Any) -> None:
        super().__init__(cfg, **kwargs)
        dcfg = cfg.disaggregated
        self.backend: Backend = choose_backend(
            cfg.learner.device, dcfg.generation_devices, dcfg.backend
        )
        self.world_size = 1 + len(dcfg.generation_devices)
        self.pushed_version = self.learner.version
        self._sender: WeightSender | None = None
        self._procs: list[Any] = []
        self._requests: list[Any] = []
        self._results: Any = None
        self._received: dict[tuple[int, int], ShardResult] = {}
        self._join: concurrent.futures.Future[WeightSender] | None = None

    @property
    def engine(self) -> Any:
        raise TrainError("disaggregated mode: the engines live in the worker processes")

    # ------------------------------------------------------------------ workers

    async def _start_workers(self) -> None:
        import torch.multiprocessing as mp

        dcfg = self.cfg.disaggregated
        ctx = mp.get_context("spawn")
        port = dcfg.master_port or free_port()
        self._results = ctx.Queue()
        cfg_json = self.cfg.model_dump(mode="json")
        for rank in range(1, self.world_size):
            q = ctx.Queue()
            p = ctx.Process(
                target=worker_main,
                args=(
                    rank, self.world_size, cfg_json, str(self.policy_dir), self.learner.version,
                    port, self.backend, q, self._results,
                ),
                name=f"kwrl-gen-{rank}",
                daemon=True,
            )  # fmt: skip
            p.start()
            self._procs.append(p)
            self._requests.append(q)

        def join() -> WeightSender:
            groups = init_groups(0, self.world_size, port, self.backend, self.cfg.learner.device)
            return WeightSender(self.model, groups, bucket_mb=dcfg.bucket_mb)

        # A daemon thread, watched: a worker that dies before the rendezvous must not leave this
        # process waiting for it (the group's timeout is hours).
        fut: concurrent.futures.Future[WeightSender] = concurrent.futures.Future()
        self._join = fut
        threading.Thread(target=_run_into, args=(fut, join), daemon=True).start()
        deadline = time.monotonic() + dcfg.start_timeout_s
        waiter = asyncio.wrap_future(fut)
        while not fut.done():
            await asyncio.wait([waiter], timeout=1.0)
            dead = [p.name for p in self._procs if not p.is_alive()]
            if dead and not fut.done():
                raise TrainError(f"disaggregated: generation worker(s) {dead} exited at start")
            if time.monotonic() > deadline:
                raise TrainError(
                    f"disaggregated: workers did not join within {dcfg.start_timeout_s} s"
                )
        if (err := fut.exception()) is not None:
            # A worker that crashed shows here first as its peer's closed connection: give the
            # crashed one a few seconds to be seen exiting, so the error names it.
            dead: list[str] = []
            for _ in range(50):
                dead = [p.name for p in self._procs if not p.is_alive()]
                if dead:
                    break
                await asyncio.sleep(0.1)
            raise TrainError(
                f"disaggregated: joining the generation workers failed ({err!r})"
                + (f"; exited: {dead}" if dead else "")
            ) from err
        self._sender = fut.result()
        for _ in self._procs:  # every worker loaded its engine
            await self._next_result(dcfg.start_timeout_s)
        self.console.print(
            f"disaggregated: {len(self._procs)} generation worker(s) on "
            f"{', '.join(dcfg.generation_devices)}, learner on {self.cfg.learner.device}, "
            f"weights over {self.backend} ({self._sender.nbytes / 2**20:.1f} MiB per sync)"
        )

    async def _next_result(self, timeout: float | None = None) -> ShardResult:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return await asyncio.to_thread(self._results.get, True, 1.0)
            except queue.Empty:
                pass
            dead = [p.name for p in self._procs if not p.is_alive()]
            if dead:
                raise TrainError(f"disaggregated: generation worker(s) {dead} exited")
            if deadline is not None and time.monotonic() > deadline:
                raise TrainError(f"disaggregated: no worker answered within {timeout} s")

    async def _stop_workers(self) -> None:
        started = self._sender is not None
        for q in self._requests:
            q.put(None)
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._sender.close)
        for p in self._procs:
            if started:  # else they may sit in a collective that will never complete
                await asyncio.to_thread(p.join, 60)
            if p.is_alive():
                p.kill()
                await asyncio.to_thread(p.join, 10)
        join = self._join
        if not started and join is not None and not join.done():
            # Its peers are gone, so a collective it is in fails soon; a rendezvous it is in
            # never completes (that daemon thread is left behind, the group never created).
            await asyncio.wait([asyncio.wrap_future(join)], timeout=30)
        if started or (join is not None and join.done()):
            close_groups()

    def dispatch(self, step_hint: int, ids: list[str]) -> _Pending:
        n = len(self._requests)
        shards = [ids[k::n] for k in range(n)]
        ranks = []
        for k, shard in enumerate(shards):
            if shard:
                self._requests[k].put(ShardRequest(step_hint, shard, self.pushed_version))
                ranks.append(k + 1)
        return _Pending(step_hint, ids, self.sampler.state.model_copy(deep=True), ranks)

    async def collect(self, p: _Pending) -> SampledBatch:
        while any((p.step_hint, r) not in self._received for r in p.ranks):
            res = await self._next_result()
            if res.error is not None:
                raise TrainError(
                    f"disaggregated: worker {res.rank}, batch {res.step_hint}:\n{res.error}"
                )
            self._received[(res.step_hint, res.rank)] = res
        shards = [self._received.pop((p.step_hint, r)) for r in p.ranks]
        causes: dict[str, int] = {}
        for s in shards:
            for k, v in (s.summary.causes if s.summary else {}).items():
                causes[k] = causes.get(k, 0) + v
        version = min(s.version for s in shards)
        trajs = [t for s in shards for t in s.trajectories]
        rollout = {
            "causes": causes,
            "trials": len(trajs),
            "worker_versions": {s.rank: s.version for s in shards},
            "sync": {s.rank: s.sync for s in shards},
        }
        return SampledBatch(p.step_hint, version, p.task_ids, trajs, p.sampler_after, rollout)

    # ------------------------------------------------------------------ weights

    def push_weights(self) -> None:
        if self._sender is None:
            return
        self._sender.broadcast(self.learner.version)
        self.pushed_version = self.learner.version

    # ------------------------------------------------------------------ loop

    async def _loop(self) -> None:
        rl = self.cfg.rl
        pending: dict[int, _Pending] = {}
        next_hint = self.state.step + 1
        exhausted = False
        try:
            await self._start_workers()
            with self._progress() as prog:
                bar = prog.add_task("steps", total=rl.steps, completed=self.state.step, info="")
                while not self._done():
                    # Dispatch every batch the staleness bound allows at this learner version.
                    while (
                        not exhausted
                        and next_hint <= rl.steps
                        and next_hint <= self.state.step + 1 + rl.max_staleness
                    ):
                        ids = self.sampler.next(rl.prompts_per_step)
                        if not ids:
                            exhausted = True
                            break
                        pending[next_hint] = self.dispatch(next_hint, ids)
                        next_hint += 1
                    if not pending:
                        break
                    t0 = time.perf_counter()
                    sb = await self.collect(pending.pop(min(pending)))
                    wait_s = time.perf_counter() - t0
                    if self.learner.version - sb.version > rl.max_staleness:
                        self.stale_dropped += 1
                        self.log({"step": self.state.step, "dropped_stale_batch": sb.version})
                        continue
                    m = await asyncio.to_thread(self.learn, sb)
                    m.update(
                        stale_dropped=self.stale_dropped,
                        wait_for_rollout_s=wait_s,
                        weight_sync_s=self._sender.last_seconds if self._sender else None,
                        worker_versions=sb.rollout.get("worker_versions"),
                    )
                    self.log(m)
                    self.checkpoint()
                    prog.update(bar, advance=1, info=f"reward {m.get('reward_mean')}")
        finally:
            await self._stop_workers()
