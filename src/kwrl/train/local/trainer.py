"""The single-machine RL loop: harbor trials -> TITO trajectories -> GRPO/DPPO steps -> new weights.

Rollouts go through exactly the path evaluation uses: `kwrl.rollout.run_rollout` runs harbor
trials in the configured environment (the local sandbox by default) with `KwrlAgent`, whose policy
is `live:<handle>`: the trainer loads its engine (`engine` or `vllm` over the model dir) and
registers it under its own handle (`kwrl.llm.engines.register_engine`), so the agents sample from
the very object the trainer pushes the learner's weights into after every step (a handle no one
registered is an error, never a second model); the engine applies them between batches.

Modes:
- sync: sample a batch with version v, train on it, push v+1, repeat.
- async: a producer keeps sampling batches while the learner trains. A batch records the weight
  version that sampled it; the learner trains on it only while `learner.version - v <=
  max_staleness` (else it is dropped and counted), and the producer never runs more than
  `max_staleness` batches ahead (a bounded queue), so no sample is older than that.

Held-out evaluations (`[heldout]`, `kwrl.train.local.heldout`) run between steps in sync mode,
on the trainer's own engine: at step 0, every `heldout.every` steps (each such step also
checkpoints) and at the last step.

Each step's metrics line says where its time went (`kwrl.train.local.steptime`): sampling,
learner and weight-push seconds, the trials' own phase sums (set-up, agent, generation, tools,
grading), the GPU's busy share, and graded trials per hour of step time.

A deadline (`train(cfg, deadline=...)`, a `time.time()` instant) stops the loop before a step,
evaluation and checkpoint that the last ones' durations say would not finish by then; the
checkpoint of the last finished step is written and DONE is not, so rerunning the same command
goes on from there.

Resume: every checkpoint stores the sampler state *as of the batches trained so far*, so prompts
that were sampled but not trained when the run died are sampled again, none skipped or repeated.
Rerunning the same command resumes from the newest checkpoint: metrics.jsonl lines of steps after it
(logged, then killed before the checkpoint) are dropped, TensorBoard purges them, and a half-run
batch's rollout dir is cleared before that step samples again. A step with no trainable
trajectory (all groups zero-variance or masked) still counts: it bumps the version and checkpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import shutil
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kwrl.config import save_config
from kwrl.errors import TrainError
from kwrl.io import write_text
from kwrl.llm.engines import register_engine
from kwrl.tasks.taskdir import task_dirs
from kwrl.train.algorithms import trained_advantages
from kwrl.train.batch import Trajectory, collate, trajectories_from_records
from kwrl.train.local import dynamic
from kwrl.train.local import heldout as heldout_eval
from kwrl.train.local.checkpoint import (
    TrainerState,
    latest_checkpoint,
    load_optimizer,
    load_trainer_state,
    save_checkpoint,
)
from kwrl.train.local.config import TrainConfig
from kwrl.train.local.learner import Learner
from kwrl.train.local.memory import release_free_memory
from kwrl.train.local.sampler import PromptSampler, SamplerState
from kwrl.train.local.steptime import GpuBusy, step_times, trial_split

if TYPE_CHECKING:
    from kwrl.rollout.runner import TrialRecord


@dataclass
class SampledBatch:
    step_hint: int
    version: int
    """Weight version of the engine when this batch was sampled."""
    task_ids: list[str]
    trajectories: list[Trajectory]
    sampler_after: SamplerState
    rollout: dict[str, Any]
    timing: dict[str, Any] = field(default_factory=dict)
    """Sampling's wall seconds, the trials' phase sums (`steptime.trial_split`), GPU busy share
    (empty where the batch was sampled elsewhere: disaggregated workers)."""
    gpu_mark: int = 0
    """`GpuBusy.mark()` when sampling began."""


class RLTrainer:
    deadline: float | None = None
    """`time.time()` instant by which the loop stops (module doc); None: none."""
    stopped_early = False
    """The deadline stopped the loop before its last step."""

    def __init__(
        self, cfg: TrainConfig, *, console: Console | None = None, deadline: float | None = None
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from kwrl.llm.packaged import resolve_model

        self.cfg = cfg
        self.console = console or Console()
        self.out = cfg.out
        self.out.mkdir(parents=True, exist_ok=True)
        save_config(cfg, self.out / "config.toml")
        torch.manual_seed(cfg.seed)
        self.tasks = {p.name: p for p in task_dirs(cfg.dataset, cfg.tasks)}
        if not self.tasks:
            raise TrainError(f"{cfg.dataset}: no task dirs")
        self.sampler = PromptSampler(
            list(self.tasks), seed=cfg.seed, epochs=cfg.rl.epochs, steering=cfg.rl.steer
        )
        self.state = TrainerState()

        resume = latest_checkpoint(self.out)
        src = str(resume / "model") if resume else resolve_model(cfg.model)
        self.tokenizer = AutoTokenizer.from_pretrained(
            resolve_model(cfg.tokenizer) if cfg.tokenizer else src
        )
        dtype = torch.bfloat16 if cfg.learner.dtype == "bfloat16" else torch.float32
        # LoRA: the base weights, with the adapters (fresh or the checkpoint's) on top; the
        # checkpoint's model/ holds them merged and is what the engine loads.
        adapter = self._adapter_to_resume(resume)
        base = resolve_model(cfg.model) if cfg.lora.rank > 0 else src
        self.model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
        self.peft: Any = None
        if cfg.lora.rank > 0:
            from kwrl.train.local.lora import add_lora

            self.peft = add_lora(self.model, cfg.lora, adapter)
            self.model = self.peft.get_base_model()
        self.model.to(cfg.learner.device)  # type: ignore[arg-type]
        self.learner = Learner(self.model, cfg.learner)
        if resume:
            load_optimizer(resume, self.learner.optimizer)
            self.state = load_trainer_state(resume)
            self.sampler.load_state(self.state.sampler)
            self.learner.version = self.state.version
            self.console.print(f"resumed from {resume} (step {self.state.step})")
        self._saved_step = self.state.step if resume else -1
        # The engine samples from its own copy, loaded from the same weights (`src`).
        self.policy_dir = Path(src)
        self.engine_cfg = cfg.engine.model_copy(update={"model": str(self.policy_dir)})
        self.engine_handle = f"trainer-{uuid.uuid4().hex[:12]}"
        """The trials' agents reach `self.engine` as policy `live:<handle>` (registered with it)."""
        self._engine: Any = None
        self.metrics_path = self.out / "metrics.jsonl"
        self._drop_metrics_after(self.state.step)
        self._tb: Any = None
        self.stale_dropped = int(self.state.extra.get("stale_dropped", 0))
        self.deadline = deadline
        self.gpu = GpuBusy(cfg.learner.device)
        self._overlapped = False
        """Async mode's steps: sampling overlaps the learner, a step's time is wall time."""
        self._step_end, self._step_mark = time.perf_counter(), self.gpu.mark()
        """When the last step ended, and the GPU poll index then (async steps' wall time)."""
        self._last_s = {"step": 0.0, "heldout": 0.0, "checkpoint": 0.0}
        """The last step's, held-out evaluation's and checkpoint's seconds: the deadline's guess."""

    def _adapter_to_resume(self, resume: Path | None) -> Path | None:
        """The checkpoint's adapter/ when resuming a LoRA run; a checkpoint of the other kind
        (LoRA vs full weights) is refused rather than silently trained the other way."""
        if resume is None:
            return None
        adapter = resume / "adapter"
        if self.cfg.lora.rank > 0 and not adapter.is_dir():
            raise TrainError(
                f"{resume}: no adapter/ to resume (the run trained every weight); lora.rank "
                "must be 0 for this run dir"
            )
        if self.cfg.lora.rank == 0 and adapter.is_dir():
            raise TrainError(
                f"{resume}: the run trained LoRA adapters (adapter/); set lora.rank as it was"
            )
        return adapter if self.cfg.lora.rank > 0 else None

    def policy_state(self) -> dict[str, torch.Tensor]:
        """The weights the engine samples with: the model's own, or with LoRA merged in."""
        if self.peft is not None:
            from kwrl.train.local.lora import merged_state_dict

            return merged_state_dict(self.model)
        return {k: v.detach() for k, v in self.model.state_dict().items()}

    # ------------------------------------------------------------------ engine

    @property
    def engine(self) -> Any:
        if self._engine is None and self.cfg.rollout_engine == "vllm":
            from kwrl.llm.engines import shared_vllm_engine

            self._engine = shared_vllm_engine(str(self.policy_dir), self.cfg.vllm)
            self._engine.weight_version = self.learner.version
        if self._engine is None:
            from kwrl.llm.engines import shared_engine

            self._engine = shared_engine(self.engine_cfg)
            self._engine.weight_version = self.learner.version
        register_engine(self.engine_handle, self._engine)
        return self._engine

    def push_weights(self) -> None:
        self.engine.update_weights(self.policy_state())
        self.engine.weight_version = self.learner.version

    # ------------------------------------------------------------------ sampling

    async def sample(self, step_hint: int) -> SampledBatch | None:
        """One step's batch: `prompts_per_step` tasks' groups, or with dynamic sampling
        (`rl.dynamic`) waves of tasks until that many groups are informative or the cap on extra
        sampling is reached (`kwrl.train.local.dynamic`); each task's trained rewards go into the
        sampler's pass-rate history."""
        from kwrl.rollout.runner import run_rollout

        rl = self.cfg.rl
        dyn = rl.dynamic
        target = rl.prompts_per_step
        cap = math.floor(target * dyn.max_factor) if dyn.on else target
        ids = self.sampler.next(
            dynamic.first_wave(target, dyn.oversample, cap) if dyn.on else target
        )
        if not ids:
            return None
        version = int(self.engine.weight_version)
        t0, mark = time.perf_counter(), self.gpu.mark()
        rcfg = self.cfg.rollout_config(self.policy_dir, self.engine_handle)
        sampled: list[str] = []
        records: list[TrialRecord] = []
        trajs: list[Trajectory] = []
        causes: Counter[str] = Counter()
        wave = 0
        while ids:
            name = f"batch-{step_hint:06d}" + (f"-w{wave}" if wave else "")
            out = self.out / "rollouts" / name
            if out.exists():  # from a run killed before training this batch: never reuse its trials
                shutil.rmtree(out)
            got = await run_rollout([self.tasks[i] for i in ids], rcfg, out)
            new = trajectories_from_records(got.records, version)
            causes.update(got.summary.causes)
            for task, rewards in dynamic.group_rewards(new).items():
                self.sampler.record(task, rewards)
            sampled += ids
            records += got.records
            trajs += new
            wave += 1
            if not dyn.on:
                break
            groups = dynamic.group_rewards(trajs)
            have = sum(dynamic.informative(r) for r in groups.values())
            n = dynamic.refill(target, have, len(sampled), dyn.oversample, cap)
            ids = self.sampler.next(n) if n else []
        graded = [float(r.reward) for r in records if isinstance(r.reward, int | float)]
        groups = dynamic.group_rewards(trajs)
        n_informative = sum(dynamic.informative(r) for r in groups.values())
        if dyn.on:
            kept = set(dynamic.select(groups, target))
            trajs = [t for t in trajs if str(t.group_id) in kept]
        after = self.sampler.state.model_copy(deep=True)
        timing = {
            "sample_s": time.perf_counter() - t0,
            "gpu_busy_sample": self.gpu.mean(mark),
            **trial_split(r.trial_dir for r in records),
        }
        stats = {
            "tasks_sampled": len(sampled),
            "trials_sampled": len(records),
            "sample_waves": wave,
            "informative_sampled": n_informative,
            "sampler_passed_over": after.passed_over,
            "graded_sampled": len(graded),
            "reward_sampled_mean": round(sum(graded) / len(graded), 4) if graded else None,
        }
        rollout = {"causes": dict(causes), **stats}
        kept_ids = list(dict.fromkeys(str(t.group_id) for t in trajs)) if dyn.on else sampled
        return SampledBatch(step_hint, version, kept_ids, trajs, after, rollout, timing, mark)

    # ------------------------------------------------------------------ learning

    def learn(self, sb: SampledBatch) -> dict[str, Any]:
        rl = self.cfg.rl
        trajs = sb.trajectories
        rewards = torch.tensor([t.reward for t in trajs])
        groups = [t.group_id for t in trajs]
        scored = [t.trained for t in trajs]  # masked: not in the baseline
        adv, keep = trained_advantages(
            rewards, groups, scored, norm_by_std=rl.norm_adv_by_std,
            drop_zero_variance=rl.drop_zero_variance,
        )  # fmt: skip
        for t, k in zip(trajs, keep.tolist(), strict=True):
            t.trainable = t.trainable and (k or not rl.drop_zero_variance)
        trainable = [t for t in trajs if t.trainable]
        graded = [t.raw_reward for t in trajs if t.raw_reward is not None]
        by_group = dynamic.group_rewards(trajs)
        metrics: dict[str, Any] = {
            "step": self.state.step + 1,
            "sampled_version": sb.version,
            "staleness": self.learner.version - sb.version,
            "tasks": sb.task_ids,
            "trials": len(trajs),
            "trainable_trials": len(trainable),
            "groups": len(by_group),
            "informative_groups": sum(dynamic.informative(r) for r in by_group.values()),
            "reward_mean": sum(graded) / len(graded) if graded else None,
            "task_rewards": {
                g: round(sum(r) / len(r), 3) if r else None for g, r in by_group.items()
            },
            **{k: v for k, v in sb.rollout.items() if k != "causes"},
            "causes": sb.rollout.get("causes", {}),
        }
        pad = self.tokenizer.pad_token_id or 0
        mark = self.gpu.mark()
        if trainable:
            order = sorted(range(len(trajs)), key=lambda i: str(groups[i]))
            batch = collate([trajs[i] for i in order], [float(adv[i]) for i in order], pad_id=pad)
            metrics.update(self.learner.step(batch))
        else:
            self.learner.version += 1
            metrics.update(version=self.learner.version, skipped="no trainable trajectory")
        self.state.step += 1
        self.state.version = self.learner.version
        self.state.sampler = sb.sampler_after
        # async drops batches, so batch numbers run ahead of steps; resume numbers on from here
        self.state.extra["batch"] = sb.step_hint
        t_push = time.perf_counter()
        self.push_weights()
        push_s = time.perf_counter() - t_push
        if sb.timing:
            metrics.update(sb.timing)
            sample_s, learner_s = sb.timing["sample_s"], metrics.get("learner_s", 0.0)
            # async: the step's wall time is from the last step's end to this one's (sampling
            # overlapped the last learner step); sync: sampling + learner + push
            wall = time.perf_counter() - self._step_end if self._overlapped else None
            n_graded = int(sb.rollout.get("graded_sampled", len(graded)))
            metrics.update(
                step_times(sample_s, learner_s, push_s, n_graded, wall_s=wall),
                gpu_busy_learn=self.gpu.mean(mark),
                gpu_busy=self.gpu.mean(self._step_mark if self._overlapped else sb.gpu_mark),
            )
        self._step_end, self._step_mark = time.perf_counter(), self.gpu.mark()
        release_free_memory()  # the step's tensors and trials: back to the OS, not the arenas
        return metrics

    def _drop_metrics_after(self, step: int) -> None:
        """Keep only metrics of steps up to `step` (the checkpoint resumed from).

        Lines are logged before their checkpoint, so a killed run may hold lines of steps that
        will run again; a stale-batch drop logged at `step` came after its checkpoint too. A line
        torn by the kill is dropped.
        """
        if not self.metrics_path.exists():
            return
        kept = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                continue
            s = int(m.get("step", 0))
            if s < step or (s == step and "dropped_stale_batch" not in m):
                kept.append(line + "\n")
        write_text(self.metrics_path, "".join(kept))

    def log(self, metrics: dict[str, Any]) -> None:
        with self.metrics_path.open("a") as f:
            f.write(json.dumps(metrics, default=str) + "\n")
        if self.cfg.tensorboard:
            if self._tb is None:
                from torch.utils.tensorboard import SummaryWriter

                # purge_step: TensorBoard hides earlier events of steps that run again.
                self._tb = SummaryWriter(str(self.out / "tb"), purge_step=self.state.step + 1)
            for k, v in metrics.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    self._tb.add_scalar(f"train/{k}", v, metrics["step"])
            self._tb.flush()

    def checkpoint(self, force: bool = False) -> None:
        # Never re-save a step: replacing the dir `latest` names opens a window with no checkpoint.
        if self._saved_step == self.state.step:
            return
        if force or self._checkpoints(self.state.step):
            t0 = time.perf_counter()
            save_checkpoint(
                self.out, self.state, self.model, self.learner.optimizer, self.tokenizer,
                adapter=self.peft,
                state_dict=self.policy_state() if self.peft is not None else None,
            )  # fmt: skip
            self._saved_step = self.state.step
            self._last_s["checkpoint"] = time.perf_counter() - t0

    def _checkpoints(self, step: int) -> bool:
        """Whether `step` is checkpointed (every `ckpt_every`, and where the held-out set is
        evaluated: a curve's points are checkpoints one can load)."""
        if step % self.cfg.rl.ckpt_every == 0:
            return True
        return heldout_eval.is_due(self.cfg, step, last=step >= self.cfg.rl.steps)

    async def evaluate_heldout(self, *, last: bool = False) -> None:
        """The held-out evaluation of the current weights, when one is due and not done."""
        step = self.state.step
        if not heldout_eval.is_due(self.cfg, step, last=last) or heldout_eval.is_done(
            self.out, step
        ):
            return
        t0 = time.perf_counter()
        line = await heldout_eval.evaluate(self.cfg, self.engine, step, self.policy_dir)
        self._last_s["heldout"] = time.perf_counter() - t0
        score = line["mean_score"]
        self.console.print(
            f"held-out after step {step}: mean score {score['value']} "
            f"[{score['lo']}, {score['hi']}] ({line['n_trials']} trials, {line['seconds']:.0f} s)"
        )

    # ------------------------------------------------------------------ loops

    def _done(self) -> bool:
        if self.state.step >= self.cfg.rl.steps:
            return True
        if self.deadline is not None and time.time() + self._next_step_s() > self.deadline:
            self.stopped_early = True
        return self.stopped_early

    def _final_eval_fits(self) -> bool:
        """Whether the last weights get their held-out evaluation: always when the run ended,
        and when the deadline stopped it, if the last evaluation's seconds still fit (a curve
        whose last point is the last step's, not an earlier checkpoint's)."""
        if not self.stopped_early:
            return True
        left = (self.deadline or 0.0) - time.time()
        return self.state.step > 0 and 0.0 < self._last_s["heldout"] < left

    def _next_step_s(self) -> float:
        """What the next step, with its held-out evaluation and checkpoint when due, should take:
        the last ones' seconds (0 before any ran)."""
        nxt = self.state.step + 1
        last = nxt >= self.cfg.rl.steps
        s = self._last_s["step"]
        # the next step's evaluation when due, else the reserve for a final one after it (the
        # deadline then stops the run with the last weights' evaluation still to fit)
        if self.cfg.heldout.dataset is not None:
            s += self._last_s["heldout"]
        if self._checkpoints(nxt) or last:
            s += self._last_s["checkpoint"]
        return s

    async def run(self) -> TrainerState:
        t0 = time.perf_counter()
        (self.out / "DONE").unlink(missing_ok=True)  # from an earlier run to fewer steps
        try:
            if self.cfg.rl.mode != "disaggregated":
                await self.evaluate_heldout()
            await self._loop()
            self.checkpoint(force=True)
            if self.cfg.rl.mode != "disaggregated" and self._final_eval_fits():
                await self.evaluate_heldout(last=True)
        finally:
            self.gpu.close()
        if not self.stopped_early:
            write_text(
                self.out / "DONE",
                json.dumps({"steps": self.state.step, "seconds": time.perf_counter() - t0}) + "\n",
            )
        if self._tb is not None:
            self._tb.close()
        return self.state

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("[bold]RL"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"), console=self.console,
        )  # fmt: skip

    async def _loop(self) -> None:
        """The mode's loop (`DisaggregatedTrainer` brings its own)."""
        if self.cfg.rl.mode == "sync":
            await self._run_sync()
        else:
            await self._run_async()

    async def _run_sync(self) -> None:
        with self._progress() as prog:
            bar = prog.add_task(
                "steps", total=self.cfg.rl.steps, completed=self.state.step, info=""
            )
            while not self._done():
                t0 = time.perf_counter()
                sb = await self.sample(self.state.step + 1)
                if sb is None:
                    break
                m = await asyncio.to_thread(self.learn, sb)
                self.log(m)
                self._last_s["step"] = time.perf_counter() - t0
                self.checkpoint()
                prog.update(bar, advance=1, info=f"reward {m.get('reward_mean')}")
                await self.evaluate_heldout(last=self.state.step >= self.cfg.rl.steps)

    async def _run_async(self) -> None:
        """Generation overlaps learning: batch k+1 samples while the learner trains on batch k.

        The producer starts batch j (counted from this run's start) only once the learner has
        finished j - 1 - max_staleness steps, so no batch is trained more than `max_staleness`
        versions after the weights it started sampling with (weights pushed meanwhile land between
        engine steps: a trial's later turns may sample with newer ones; DPPO's ratio is against
        the logprobs each token was sampled with). Held-out evaluations run between steps as in
        sync mode, the step-0 one before sampling starts; no batch starts during one (a batch
        already sampling finishes beside it).
        """
        rl = self.cfg.rl
        queue: asyncio.Queue[SampledBatch | None] = asyncio.Queue()
        stepped = asyncio.Event()
        not_evaluating = asyncio.Event()
        not_evaluating.set()
        start_step = self.state.step

        async def produce() -> None:
            hint = int(self.state.extra.get("batch", self.state.step))
            j = 0
            while True:
                j += 1
                while self.state.step - start_step < j - 1 - rl.max_staleness:
                    stepped.clear()
                    await stepped.wait()
                await not_evaluating.wait()  # no new batch beside an evaluation
                hint += 1
                sb = await self.sample(hint)
                await queue.put(sb)
                if sb is None:
                    return

        self._overlapped = True
        self._step_end, self._step_mark = time.perf_counter(), self.gpu.mark()
        producer = asyncio.create_task(produce())
        try:
            with self._progress() as prog:
                bar = prog.add_task("steps", total=rl.steps, completed=self.state.step, info="")
                while not self._done():
                    t0 = time.perf_counter()
                    sb = await queue.get()
                    if sb is None:
                        break
                    if self.learner.version - sb.version > rl.max_staleness:
                        self.stale_dropped += 1
                        self.state.extra["stale_dropped"] = self.stale_dropped
                        self.log({"step": self.state.step, "dropped_stale_batch": sb.version})
                        continue
                    m = await asyncio.to_thread(self.learn, sb)
                    stepped.set()
                    m["stale_dropped"] = self.stale_dropped
                    self.log(m)
                    self._last_s["step"] = time.perf_counter() - t0
                    self.checkpoint()
                    prog.update(bar, advance=1, info=f"reward {m.get('reward_mean')}")
                    t_eval = time.perf_counter()
                    not_evaluating.clear()
                    try:
                        await self.evaluate_heldout(last=self.state.step >= rl.steps)
                    finally:
                        not_evaluating.set()
                    if time.perf_counter() - t_eval > 1.0:  # an evaluation is not step time
                        self._step_end = time.perf_counter()
                        self._step_mark = self.gpu.mark()
        finally:
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer
