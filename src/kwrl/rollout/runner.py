"""Batches of harbor trials: run, classify, retry, summarise.

`run_batch(jobs, trials_dir, concurrency=...)` is the one batch loop (rollout, eval and SkyRL's
generator run their trials through it): each job (a task dir and sample, optionally its own config
and group) runs through harbor (`await Trial.create(cfg)` then `.run()`), at most `concurrency` at
a time (an asyncio semaphore, or one the caller shares), each in the configured environment
(default: the local bubblewrap sandbox). Every finished trial becomes a `TrialRecord`: its reward
and per-criterion scores (reward.json), its `FailureCause` (kwrl.rollout.failures) and, applied
once per batch by `apply_group_decisions`, the training decision of its group
(kwrl.rollout.masking). Infrastructure failures are retried up to `retries` times under a new
trial name; earlier attempts' dirs stay for inspection. `run_rollout(task_dirs, config, out)` runs
`n_samples` trials per task and returns a `RolloutResult` (the final records, every attempt, their
`RolloutSummary`): harbor's trial dirs go to `<out>/trials/`, and `summary.json`, written from that
result for people and other processes (its callers use the object), to `<out>/`. Each trial dir and each record (summary.json's rows) carries the trial's run manifest
(`kwrl.rollout.manifest`: code, config hash, seeds, world, judge).
`build_rollout_config(settings, model, ...)` is how every verb makes a `RolloutConfig` from the
settings their configs share (`kwrl.rollout.settings.TrialSettings`).

With env `KWRL_FAULTS` set (`kwrl.rollout.faults`, the soak and tests only), `run_trial` plays
the injector's fault of each attempt into it and records it in the trial dir (`fault.json`).

Non-obvious choice: a trial that raises inside harbor is caught here and recorded as a failure
(`sandbox`; `config` for a `ConfigError`, e.g. bad task.toml limits, which is not retried), so one
broken trial never takes the batch down: the others go on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from kwrl.agent.config import SETTINGS_KWARG, AgentConfig, KwrlAgentSettings
from kwrl.config import format_validation_error
from kwrl.errors import ConfigError, TaskFormatError, TrialFormatError
from kwrl.io import write_json
from kwrl.rollout import faults
from kwrl.rollout.failures import INFRA, FailureCause, classify_result
from kwrl.rollout.manifest import RunManifest, read_manifest, run_manifest, write_manifest
from kwrl.rollout.masking import group_decisions, should_retry
from kwrl.rollout.settings import HARBOR_AGENTS, KWRL_AGENT, LOCAL, TrialRun, TrialSettings
from kwrl.rollout.trial import read_json, read_trial, trial_scores
from kwrl.tasks.taskdir import NO_FAMILY, task_family

ROLLOUT_FILES = ("trials", "summary.json")
"""What `run_rollout` writes at the top of its `out` (`kwrl.io.OutputDir.open`)."""


class RolloutConfig(TrialRun):
    """A batch of trials as harbor runs them: its agent, environment and verifier kwargs resolved
    (`build_rollout_config` makes one from a run's `TrialSettings`)."""

    agent: str = "oracle"
    """oracle, nop, or an agent import path module:Class."""
    model: str | None = None
    """Model name handed to the agent (harbor's agent.model_name)."""
    n_samples: int = Field(default=1, ge=1)
    """Trials per task (the group size)."""
    agent_settings: KwrlAgentSettings | None = None
    """KwrlAgent's settings (agent loop, policy client, tokenizer), handed to the agent as its one
    kwarg `settings`; None for harbor's own agents."""
    agent_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments of the agent (another agent's own, e.g. SkyRL's session id)."""
    environment: str = LOCAL
    """Trial environment: local, docker, modal, or an environment import path module:Class."""
    environment_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the environment (LocalSandboxConfig fields for local)."""
    verifier_env: dict[str, str] = Field(default_factory=dict)
    """Environment of the verifier (e.g. KWRL_JUDGE_* settings)."""
    manifest: RunManifest | None = None
    """The run's manifest (`kwrl.rollout.manifest`); each trial writes its own from it."""


def build_rollout_config(
    settings: TrialSettings,
    model: str | None,
    *,
    agent: str = KWRL_AGENT,
    agent_kwargs: Mapping[str, Any] | None = None,
    n_samples: int = 1,
    tokenizer: str | None = None,
) -> RolloutConfig:
    """The RolloutConfig of `model`'s trials under `settings`: the one place trial settings
    become harbor's kwargs (eval, rollout, train, smoke and SkyRL's generator build through it).

    `model` `oracle` or `nop` (`HARBOR_AGENTS`) is harbor's agent of that name, with no policy and
    no kwargs; any other `model` is what `agent` (KwrlAgent unless named) samples, with its
    `agent_settings` (`KwrlAgentSettings`, validated here): the agent settings `settings` sets
    with the AgentConfig fields of `agent_kwargs` over them, `settings.policy` with
    `agent_kwargs["policy_config"]` over it, and `tokenizer` (the trainer's: its policy dir) else
    `agent_kwargs["tokenizer"]` else `settings.tokenizer`; the rest of `agent_kwargs` stay the
    agent's own kwargs. A ConfigError names a setting no agent would take. The
    environment's kwargs are `settings.sandbox`'s; the verifier's environment is the judge's
    (`judge_env`, read from this process's environment now) with `settings.verifier_env` over it.
    Its `manifest` is the run's, of `settings` (the verb's whole config) and the judge.
    """
    from kwrl.grading.judges import judge_env

    shared: dict[str, Any] = {k: getattr(settings, k) for k in TrialRun.model_fields}
    shared["environment"] = settings.sandbox.environment
    shared["environment_kwargs"] = settings.sandbox.environment_kwargs()
    shared["verifier_env"] = {
        **(judge_env(settings.judge) if settings.judge else {}),
        **settings.verifier_env,
    }
    shared["manifest"] = run_manifest(settings, settings.judge)
    if model in HARBOR_AGENTS:
        return RolloutConfig(**shared, agent=model, n_samples=n_samples)
    kwargs = dict(agent_kwargs or {})
    own = {k: kwargs.pop(k) for k in list(kwargs) if k in AgentConfig.model_fields}
    policy, named = kwargs.pop("policy_config", None) or {}, kwargs.pop("tokenizer", None)
    try:
        own_settings = KwrlAgentSettings.model_validate({
            "agent": {**settings.agent.model_dump(exclude_unset=True), **own},
            "policy": {**settings.policy, **policy},
            "tokenizer": tokenizer or named or settings.tokenizer,
        })  # fmt: skip
    except ValidationError as e:
        raise ConfigError(format_validation_error("agent settings", e)) from None
    return RolloutConfig(
        **shared, agent=agent, model=model, n_samples=n_samples, agent_settings=own_settings,
        agent_kwargs=kwargs,
    )  # fmt: skip


@dataclass
class TrialRecord:
    """One finished trial attempt, as the rollout saw it."""

    task: str
    sample: int
    attempt: int
    trial_name: str
    trial_dir: str
    cause: FailureCause
    reward: float | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    """harbor's verifier rewards (reward.json: kwrl's grader writes `reward` alone)."""
    criteria: dict[str, float] = field(default_factory=dict)
    """Score per criterion, {verifier_id: score} (`kwrl.rollout.trial.trial_scores`)."""
    passed: bool | None = None
    """Whether every criterion the pass needs passed (grades.json `pass`); None: not recorded."""
    error: str | None = None
    seconds: float = 0.0
    trained: bool = False
    train_reward: float | None = None
    manifest: RunManifest | None = None
    """The trial's manifest (`kwrl.rollout.manifest`), as written to its dir."""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cause"] = str(self.cause)
        d["manifest"] = self.manifest.model_dump(mode="json") if self.manifest else None
        return d


def trial_config(task_dir: Path, cfg: RolloutConfig, trials_dir: Path, name: str) -> Any:
    """harbor's TrialConfig for one trial."""
    from harbor.models.trial.config import AgentConfig as HarborAgent
    from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig

    from kwrl.sandbox.presets import environment_config

    kwargs = dict(cfg.agent_kwargs)
    if cfg.agent_settings is not None:
        kwargs[SETTINGS_KWARG] = cfg.agent_settings.model_dump(mode="json")
    if ":" in cfg.agent:
        agent = HarborAgent(import_path=cfg.agent, model_name=cfg.model, kwargs=kwargs)
    else:
        agent = HarborAgent(name=cfg.agent, model_name=cfg.model, kwargs=kwargs)
    if cfg.agent_timeout_sec is not None:
        agent.override_timeout_sec = cfg.agent_timeout_sec
    return TrialConfig(
        task=TaskConfig(path=Path(task_dir).resolve()),
        trial_name=name,
        trials_dir=Path(trials_dir).resolve(),  # other processes run the trial: no cwd
        agent=agent,
        environment=environment_config(cfg.environment, cfg.environment_kwargs),
        verifier=VerifierConfig(env=cfg.verifier_env),
    )


def check_task_config(task_dir: Path) -> None:
    """Refuse, before any trial, a task that cannot run: not a task dir (no instruction.md; a
    world seed given for a task says so), a task.toml harbor cannot read, a world seed its
    archipelago.json names that is not there (a task copied out of its dataset), all
    `TaskFormatError`s naming the file; task.toml limits no sandbox can apply (`ConfigError`
    naming task.toml and the field). Reported once, never retried."""
    from harbor.models.task.config import TaskConfig

    from kwrl.errors import TaskFormatError
    from kwrl.sandbox.contract import check_limits
    from kwrl.tasks.taskdir import INSTRUCTION, META_JSON, read_meta, resolve_world

    task_dir = Path(task_dir)
    if not task_dir.is_dir():
        raise TaskFormatError(task_dir, None, "no such task dir")
    if not (task_dir / INSTRUCTION).is_file():
        world = (task_dir / "world.json").is_file() or (task_dir / "filesystem").is_dir()
        why = ": a world seed, not a task; give the dataset that holds it" if world else ""
        raise TaskFormatError(task_dir, None, f"not a task dir (no {INSTRUCTION}){why}")
    if (task_dir / META_JSON).is_file():
        resolve_world(task_dir, read_meta(task_dir))
    path = task_dir / "task.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFormatError(path, None, f"cannot read the task's config ({e})") from None
    try:
        config = TaskConfig.model_validate_toml(text)
    except Exception as e:  # harbor's own validation, as its Task would run it
        raise TaskFormatError(path, None, f"invalid task config: {e}") from None
    check_limits(config.environment, path)


def _record_result(record: TrialRecord, result: Any, trial_dir: Path) -> None:
    """Fill `record`'s cause, rewards and error from harbor's `TrialResult` of `trial_dir`."""
    rewards = result.verifier_result.rewards if result.verifier_result else None
    sandbox = read_json(trial_dir / "sandbox.json")
    record.cause = classify_result(
        result, sandbox if isinstance(sandbox, dict) else None, trial_dir
    )
    record.rewards = {k: float(v) for k, v in (rewards or {}).items()}
    record.reward = record.rewards.get("reward")
    if record.reward is not None:
        record.criteria, record.passed = trial_scores(trial_dir, record.rewards)
    if result.exception_info is not None:
        info = result.exception_info
        record.error = f"{info.exception_type}: {info.exception_message}"[:2000]


def record_from_dir(trial_dir: Path, task: str, sample: int, attempt: int) -> TrialRecord | None:
    """The record of a finished trial dir (harbor's result.json), or None if unfinished; what
    `run_trial` returned when it ran it, but for `seconds` (harbor's start to end here)."""
    from harbor.models.trial.result import TrialResult

    path = trial_dir / "result.json"
    if not path.is_file():
        return None
    try:
        result = TrialResult.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    rec = TrialRecord(
        task=task, sample=sample, attempt=attempt, trial_name=trial_dir.name,
        trial_dir=str(trial_dir), cause=FailureCause.SANDBOX,
    )  # fmt: skip
    _record_result(rec, result, trial_dir)
    rec.manifest = read_manifest(trial_dir)
    if result.finished_at is not None and result.started_at is not None:
        rec.seconds = (result.finished_at - result.started_at).total_seconds()
    return rec


async def run_trial(
    task_dir: Path,
    cfg: RolloutConfig,
    trials_dir: Path,
    name: str,
    *,
    sample: int = 0,
    attempt: int = 0,
) -> TrialRecord:
    """Run one harbor trial and record it; never raises for a failed trial. The trial's manifest
    (`cfg.manifest` for this task and the agent's `seed`) goes on the record and, once harbor
    made the trial dir, into it (`manifest.json`)."""
    from harbor.trial.trial import Trial

    start = time.monotonic()
    trial_dir = trials_dir / name
    injector = faults.active()
    kinds = injector.applicable(cfg, Path(task_dir)) if injector is not None else []
    fault = injector.draw(name, kinds) if injector is not None else None
    if fault is not None and injector is not None:
        cfg = faults.adjust(cfg, fault, injector)
    seed = cfg.agent_settings.agent.seed if cfg.agent_settings is not None else None
    record = TrialRecord(
        task=Path(task_dir).name, sample=sample, attempt=attempt, trial_name=name,
        trial_dir=str(trial_dir), cause=FailureCause.SANDBOX,
        manifest=cfg.manifest.for_trial(task_dir, seed) if cfg.manifest else None,
    )  # fmt: skip
    try:
        trial = await Trial.create(trial_config(task_dir, cfg, trials_dir, name))
        if fault is not None and fault in faults.HOST_KINDS and injector is not None:
            faults.arm(trial, fault, injector, trial_dir)
        result = await trial.run()
    except Exception as e:  # a trial that cannot even be built is recorded, not raised
        record.error = f"{type(e).__name__}: {e}"
        if isinstance(e, ConfigError):  # the task's own config: reported, never retried
            record.cause = FailureCause.CONFIG
        elif isinstance(e, TaskFormatError) or _missing_task_file(e, task_dir):
            record.cause = FailureCause.TASK  # the input cannot be read: never retried
    else:
        if fault is not None and fault not in faults.HOST_KINDS:
            faults.record(trial_dir, fault)
        _record_result(record, result, trial_dir)
    if record.manifest is not None and trial_dir.is_dir():
        write_manifest(trial_dir, record.manifest)
    record.seconds = time.monotonic() - start
    return record


def _missing_task_file(e: Exception, task_dir: Path) -> bool:
    """`e` says a file of the task dir itself is missing (harbor reading task.toml)."""
    name = getattr(e, "filename", None)
    if not isinstance(e, FileNotFoundError) or not isinstance(name, str):
        return False
    return Path(name).resolve().is_relative_to(Path(task_dir).resolve())


async def run_with_retries(
    task_dir: Path, cfg: RolloutConfig, trials_dir: Path, sample: int
) -> list[TrialRecord]:
    """All attempts of one sample; the last one counts."""
    attempts: list[TrialRecord] = []
    for attempt in range(cfg.retries + 1):
        name = f"{Path(task_dir).name}__s{sample}" + (f"__r{attempt}" if attempt else "")
        rec = await run_trial(task_dir, cfg, trials_dir, name, sample=sample, attempt=attempt)
        attempts.append(rec)
        if not should_retry(rec.cause, attempt, cfg.retries):
            break
    return attempts


@dataclass
class BatchJob:
    """One sample of one task in a batch (`run_batch`)."""

    task_dir: Path
    sample: int
    config: RolloutConfig | None = None
    """This job's config, over the batch's (e.g. a per-trial seed or session id)."""
    group: str | None = None
    """Its group for the training decisions (default: the task's name)."""


@dataclass
class JobResult:
    """What `run_batch` made of one job: its attempts (the last one counts) and wall seconds."""

    job: BatchJob
    attempts: list[TrialRecord]
    seconds: float
    """From the job's start to its last attempt's end, its wait for a slot included."""

    @property
    def final(self) -> TrialRecord:
        return self.attempts[-1]


async def run_batch(
    jobs: Sequence[BatchJob],
    trials_dir: Path,
    *,
    concurrency: int | asyncio.Semaphore,
    config: RolloutConfig | None = None,
    recover: Callable[[Path, int], TrialRecord | None] | None = None,
    on_done: Callable[[JobResult], None] | None = None,
    train: bool | None = None,
) -> list[JobResult]:
    """Run `jobs` (each with retries, `run_with_retries`, under its own config or `config`), at
    most `concurrency` at a time (an int, or a semaphore the caller shares across batches); one
    result per job, in order. The batch runner of rollout, eval and SkyRL's generator.

    `recover(task_dir, sample)`, called in the job's slot before it runs, may return the record of
    a trial already finished (eval's resume): the job is then that record, nothing runs.
    `on_done(result)` is called as each job ends, in the order they end. `train` True or False
    applies `apply_group_decisions` to the final attempts once all ended (groups: each job's
    `group`, else its task); None leaves the records as they ran.
    """
    sem = asyncio.Semaphore(concurrency) if isinstance(concurrency, int) else concurrency
    configs: list[RolloutConfig] = []
    for job in jobs:
        cfg = job.config or config
        if cfg is None:
            raise ValueError(f"run_batch: job {job.task_dir.name} s{job.sample}: no config")
        configs.append(cfg)

    async def one(job: BatchJob, cfg: RolloutConfig) -> JobResult:
        start = time.monotonic()
        async with sem:
            rec = recover(job.task_dir, job.sample) if recover is not None else None
            if rec is not None:
                attempts = [rec]
            else:
                attempts = await run_with_retries(job.task_dir, cfg, trials_dir, job.sample)
        result = JobResult(job, attempts, time.monotonic() - start)
        if on_done is not None:
            on_done(result)
        return result

    results = list(await asyncio.gather(*map(one, jobs, configs)))
    if train is not None:
        groups = [r.job.group or r.final.task for r in results]
        apply_group_decisions([r.final for r in results], groups, train=train)
    return results


async def run_rollout(
    task_dirs: Sequence[Path],
    cfg: RolloutConfig,
    out: Path,
    on_done: Callable[[TrialRecord], None] | None = None,
) -> RolloutResult:
    """Every sample of every task (`run_batch`): the final attempt of each, group decisions
    applied, every attempt and their summary; summary.json is written from that result (callers
    use the result, never the file)."""
    trials_dir = out / ROLLOUT_FILES[0]
    trials_dir.mkdir(parents=True, exist_ok=True)
    history: list[TrialRecord] = []

    def done(result: JobResult) -> None:
        history.extend(result.attempts)
        if on_done is not None:
            on_done(result.final)

    jobs = [BatchJob(Path(t), s) for t in task_dirs for s in range(cfg.n_samples)]
    results = await run_batch(
        jobs, trials_dir, concurrency=cfg.concurrency, config=cfg, on_done=done, train=True
    )
    finals = [r.final for r in results]
    families = {Path(t).name: task_family(Path(t)) for t in task_dirs}
    result = RolloutResult(finals, history, RolloutSummary.of(finals, history, families))
    write_json(out / ROLLOUT_FILES[1], result.summary_json(cfg))
    return result


def apply_group_decisions(
    records: list[TrialRecord], groups: Sequence[str] | None = None, *, train: bool = True
) -> None:
    """Set each record's `trained` and `train_reward`: with `train`, by its group's decisions
    (`kwrl.rollout.masking.group_decisions`; `groups[i]` is `records[i]`'s group, default its
    task: one task's samples); without, every record trains on its raw reward, 0 if ungraded (an
    eval phase: nothing masked)."""
    if not train:
        for r in records:
            r.trained, r.train_reward = True, r.reward if r.reward is not None else 0.0
        return
    keys = [r.task for r in records] if groups is None else groups
    by_group: dict[str, list[TrialRecord]] = {}
    for r, g in zip(records, keys, strict=True):
        by_group.setdefault(g, []).append(r)
    for recs in by_group.values():
        decisions = group_decisions([r.cause for r in recs], [r.reward for r in recs])
        for r, d in zip(recs, decisions, strict=True):
            r.trained, r.train_reward = d.trained, d.reward


def undecided_counts(
    finals: list[TrialRecord], families: dict[str, str | None]
) -> dict[str, Undecided]:
    """Per task family, the graded trials' criteria and how many no machine check could decide
    (grades.json `undecided`); tasks without one count under `NO_FAMILY`."""
    out: dict[str, Undecided] = {}
    for r in finals:
        if r.reward is None:
            continue
        try:
            grades = read_trial(r.trial_dir).grades
        except (OSError, TrialFormatError):
            continue
        u = out.setdefault(families.get(r.task) or NO_FAMILY, Undecided())
        u.criteria += len(grades)
        u.undecided += sum(g.undecided for g in grades)
    return dict(sorted(out.items()))


@dataclass
class Undecided:
    """A task family's graded criteria in a rollout, and how many no machine check decided."""

    criteria: int = 0
    undecided: int = 0


@dataclass
class TaskGroup:
    """One task's final trials in a rollout, in sample order (its group)."""

    rewards: list[float | None] = field(default_factory=list)
    """Raw rewards; None: not graded."""
    causes: list[str] = field(default_factory=list)
    """`FailureCause` values."""
    trained: int = 0
    """How many train (the group decisions)."""
    train_rewards: list[float | None] = field(default_factory=list)
    """Training rewards; None where masked."""


@dataclass
class RolloutSummary:
    """A rollout's totals, per-task groups, causes and undecided criteria per task family:
    summary.json's figures (`RolloutResult.summary_json`), built once from the records."""

    trials: int
    attempts: int
    retries: int
    graded: int
    mean_reward: float | None
    """Mean raw reward of the graded trials; None: none graded."""
    pass_rate: float | None
    """Share of the trials that passed (grades.json `pass`); None: no trial."""
    causes: dict[str, int]
    """Final trials per `FailureCause` value."""
    undecided_by_family: dict[str, Undecided]
    trained: int
    tasks: dict[str, TaskGroup]

    @classmethod
    def of(
        cls, finals: list[TrialRecord], history: list[TrialRecord],
        families: dict[str, str | None] | None = None,
    ) -> RolloutSummary:  # fmt: skip
        graded = [r.reward for r in finals if r.reward is not None]
        causes: dict[str, int] = {}
        tasks: dict[str, TaskGroup] = {}
        for r in finals:
            causes[str(r.cause)] = causes.get(str(r.cause), 0) + 1
            t = tasks.setdefault(r.task, TaskGroup())
            t.rewards.append(r.reward)
            t.causes.append(str(r.cause))
            t.trained += int(r.trained)
            t.train_rewards.append(r.train_reward if r.trained else None)
        return cls(
            trials=len(finals),
            attempts=len(history),
            retries=len(history) - len(finals),
            graded=len(graded),
            mean_reward=sum(graded) / len(graded) if graded else None,
            pass_rate=sum(1 for r in finals if r.passed) / len(finals) if finals else None,
            causes=causes,
            undecided_by_family=undecided_counts(finals, families or {}),
            trained=sum(r.trained for r in finals),
            tasks=tasks,
        )

    @property
    def infra_failures(self) -> int:
        """Final trials that failed on infrastructure (`kwrl.rollout.failures.INFRA`)."""
        return sum(n for c, n in self.causes.items() if FailureCause(c) in INFRA)


@dataclass
class RolloutResult:
    """What `run_rollout` hands back: the final attempt of every sample (group decisions
    applied), every attempt, and their summary."""

    records: list[TrialRecord]
    attempts: list[TrialRecord]
    summary: RolloutSummary

    def summary_json(self, cfg: RolloutConfig) -> dict[str, Any]:
        """summary.json: the run's config and manifest, the summary, and every record."""
        return {
            "config": cfg.model_dump(mode="json", exclude={"manifest"}),
            "manifest": cfg.manifest.model_dump(mode="json") if cfg.manifest else None,
            **asdict(self.summary),
            "records": [r.as_dict() for r in self.records],
            "all_attempts": [r.as_dict() for r in self.attempts],
        }
