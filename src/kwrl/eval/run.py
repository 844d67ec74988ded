"""Resumable evaluation runs: trials through kwrl's batch runner, one outcome line per trial.

`run_eval(cfg)` evaluates `cfg.model` on every task of `cfg.dataset`, `n_samples` times each:

    RUN_DIR/eval.toml       the resolved EvalConfig (a rerun must name the same model and sample seed)
    RUN_DIR/trials/         harbor trial dirs (`<task>__s<k>`, retries `__r<n>`), by kwrl.rollout
    RUN_DIR/trials.jsonl    append-only: one `TrialOutcome` per finished sample (fsync'd), with
                            the trial's run manifest (kwrl.rollout.manifest)
    RUN_DIR/eval.json       config, the run's manifests, metrics (kwrl.eval.metrics), every outcome
    RUN_DIR/report.html     kwrl.eval.report.write_report (by `kwrl eval` after the run)

The model is `oracle` or `nop` (harbor's agents) or a KwrlAgent policy spec
(`http://HOST:PORT/v1#NAME`, `litellm:...`, `engine:...`). An in-process one (`engine:`, `vllm:`)
is loaded once before the first trial and lent to every trial by handle (`live:eval-XXXXXXXX`,
`lend_policy`), as the trainer lends its engine; eval.toml keeps the spec as given. The judge spec
goes to the verifier as `KWRL_JUDGE`, with its settings and key variable
(`kwrl.grading.judges.judge_env`, docs/contracts.md).

Resuming: a sample already in trials.jsonl is done. A sample whose last attempt dir holds harbor's
`result.json` (written only when a trial ends) with a final cause is adopted without rerunning (the
run was killed between the trial's end and its jsonl line). Any other dir of a pending sample is
what an interrupted trial left: it is deleted and the sample runs again (`recover_or_clear`,
the batch runner's `recover` hook, in the sample's slot). A truncated last jsonl
line (killed mid-write) is ignored.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kwrl.config import save_config
from kwrl.errors import ConfigError
from kwrl.eval.config import EvalConfig
from kwrl.eval.metrics import (
    UNKNOWN_TOOL,
    CriterionResult,
    ToolUse,
    TrialOutcome,
    compute_metrics,
)
from kwrl.grading.grade import CriterionGrade
from kwrl.io import write_json
from kwrl.llm.engines import unregister_engine
from kwrl.rollout.manifest import RunManifest
from kwrl.rollout.masking import should_retry
from kwrl.rollout.runner import (
    KWRL_AGENT,
    BatchJob,
    JobResult,
    RolloutConfig,
    TrialRecord,
    build_rollout_config,
    record_from_dir,
    run_batch,
)
from kwrl.rollout.trial import read_trial
from kwrl.tasks.taskdir import META_JSON, read_meta, task_family

OUTCOMES = "trials.jsonl"
RUN_FILES = ("trials", OUTCOMES, "eval.toml", "eval.json", "report.html", "compare.json",
             "compare.html")  # fmt: skip
"""What `kwrl eval` and `kwrl report` write at the top of a run dir (`kwrl.io.OutputDir.open`)."""


def rollout_config(cfg: EvalConfig) -> RolloutConfig:
    """The RolloutConfig that runs `cfg`'s trials."""
    return build_rollout_config(cfg, cfg.model, n_samples=cfg.n_samples)


# ---------------------------------------------------------------- reading a trial dir


def _criteria(grades: list[CriterionGrade], criteria: dict[str, float]) -> list[CriterionResult]:
    """The trial's criteria: grades.json's rows, else the scores alone (`TrialRecord.criteria`)."""
    if grades:
        return [
            CriterionResult(
                verifier_id=g.verifier_id,
                criteria=g.criteria,
                score=g.score,
                passed=g.passed,
                method=g.method,
                rationale=g.rationale,
                is_primary_objective=g.is_primary_objective,
                undecided=g.undecided,
            )
            for g in grades
        ]
    return [CriterionResult(verifier_id=k, score=v, passed=v >= 1.0) for k, v in criteria.items()]


def task_labels(task_dir: Path) -> dict[str, str | None]:
    """task_name, domain, expected_output and difficulty of a task dir (archipelago.json), and a
    generated task's family (task.toml)."""
    keys = ("task_name", "domain", "expected_output", "difficulty")
    if not (Path(task_dir) / META_JSON).is_file():
        return {**dict.fromkeys(keys), "family": task_family(Path(task_dir))}
    meta = read_meta(Path(task_dir)).model_dump(mode="json")
    return {**{k: meta.get(k) for k in keys}, "family": task_family(Path(task_dir))}


def outcome_from_record(rec: TrialRecord, labels: dict[str, str | None], out: Path) -> TrialOutcome:
    """A `TrialOutcome` from the rollout's record and what the trial dir holds."""
    trial_dir = Path(rec.trial_dir)
    files = read_trial(trial_dir)
    meta = files.agent_meta
    tools: dict[str, ToolUse] = {}
    for turn in files.turn_stats:
        for call in turn.tool_calls:
            unknown = call.outcome == "unknown_tool"
            use = tools.setdefault(UNKNOWN_TOOL if unknown else call.name, ToolUse())
            use.calls += 1
            use.ok += int(call.ok)
    criteria = _criteria(files.grades, rec.criteria)
    if rec.passed is not None:
        passed = rec.passed
    else:
        passed = rec.reward is not None and bool(criteria) and all(c.passed for c in criteria)
    try:
        rel = str(trial_dir.resolve().relative_to(out.resolve()))
    except ValueError:
        rel = str(trial_dir)
    return TrialOutcome(
        task=rec.task, sample=rec.sample, trial_name=rec.trial_name, trial_dir=rel,
        task_name=labels.get("task_name") or "", domain=labels.get("domain"),
        expected_output=labels.get("expected_output"), difficulty=labels.get("difficulty"),
        family=labels.get("family"), cause=str(rec.cause), reward=rec.reward, passed=passed, error=rec.error,
        criteria=criteria, turns=meta.n_turns, input_tokens=files.n_input_tokens,
        output_tokens=files.n_output_tokens, stop_reason=meta.stop_reason,
        tools=tools, seconds=rec.seconds, attempts=rec.attempt + 1, final_answer=files.final_answer,
        manifest=rec.manifest or files.manifest,
    )  # fmt: skip


# ---------------------------------------------------------------- the outcome log


def read_outcomes(run_dir: Path) -> list[TrialOutcome]:
    """Outcomes in trials.jsonl; the last line counts for a repeated sample; broken lines skipped."""
    path = run_dir / OUTCOMES
    if not path.is_file():
        return []
    found: dict[tuple[str, int], TrialOutcome] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            o = TrialOutcome.model_validate_json(line)
        except ValueError:
            continue
        found[(o.task, o.sample)] = o
    return sorted(found.values(), key=lambda o: (o.task, o.sample))


def append_outcome(run_dir: Path, outcome: TrialOutcome) -> None:
    with (run_dir / OUTCOMES).open("a", encoding="utf-8") as f:
        f.write(outcome.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())


def _attempt_dirs(trials_dir: Path, task: str, sample: int) -> list[Path]:
    base = f"{task}__s{sample}"
    found = [
        p for p in trials_dir.glob(f"{base}*") if p.name == base or p.name.startswith(f"{base}__r")
    ]
    return sorted(found, key=lambda p: int(p.name.rsplit("__r", 1)[1]) if "__r" in p.name else 0)


def recover_or_clear(trials_dir: Path, task: str, sample: int, retries: int) -> TrialRecord | None:
    """Adopt a pending sample's finished last attempt, else delete what an interrupted one left."""
    dirs = _attempt_dirs(trials_dir, task, sample)
    if dirs:
        attempt = len(dirs) - 1
        rec = record_from_dir(dirs[-1], task, sample, attempt)
        if rec is not None and not should_retry(rec.cause, attempt, retries):
            return rec
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return None


# ---------------------------------------------------------------- the run


def lend_policy(rcfg: RolloutConfig, handle: str) -> tuple[RolloutConfig, str | None]:
    """`rcfg` with its in-process policy (`engine:MODEL`, `vllm:MODEL`) loaded once, here, and
    lent to every trial as `live:HANDLE` (`kwrl.llm.policy.lend_engine`): the trials find it by
    name, as the trainer's find its engine. Returns (that config, HANDLE) for the caller to
    unregister, or (`rcfg`, None) for any other policy. The agents keep the run's policy
    settings (`agent_settings.policy`), and render with the lent engine's own tokenizer
    (`PolicyClient.tokenizer`) unless `agent_settings.tokenizer` or KWRL_TOKENIZER names one."""
    from kwrl.llm.policy import PolicySettings, lend_engine

    own = rcfg.agent_settings
    if rcfg.agent != KWRL_AGENT or rcfg.model is None or own is None:
        return rcfg, None
    if "policy" in rcfg.agent_kwargs:  # the agent samples another policy than the run's model
        return rcfg, None
    live = lend_engine(own.policy.for_model(rcfg.model), handle)
    if live is None:
        return rcfg, None
    if own.policy.kind is not None:  # `live:` names its kind
        policy = own.policy.model_dump(exclude_unset=True, exclude={"kind"})
        own = own.model_copy(update={"policy": PolicySettings.model_validate(policy)})
    return rcfg.model_copy(update={"model": live, "agent_settings": own}), handle


def trial_seed(sample_seed: int, task: str, sample: int) -> int:
    """The sampling seed of trial (task, sample): stable across processes and machines."""
    digest = hashlib.sha256(f"{sample_seed}/{task}/{sample}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # 63 bits: torch's manual_seed takes it


def _check_resume(cfg: EvalConfig) -> None:
    import tomllib

    path = cfg.out / "eval.toml"
    if not path.is_file():
        return
    old = tomllib.loads(path.read_text(encoding="utf-8"))
    for key in ("model", "sample_seed"):
        was, now = old.get(key), getattr(cfg, key)
        if was != now:
            raise ConfigError(
                f"{path}: {key}: this run dir evaluated {key} {was!r}, not {now!r}; "
                "pick another --out"
            )


def plan(cfg: EvalConfig) -> tuple[list[tuple[Path, int]], list[TrialOutcome]]:
    """(pending (task dir, sample) pairs, outcomes already recorded for this dataset)."""
    from kwrl.tasks.taskdir import task_dirs

    tasks = task_dirs(cfg.dataset)
    done = {(o.task, o.sample): o for o in read_outcomes(cfg.out)}
    wanted = [(t, s) for t in tasks for s in range(cfg.n_samples)]
    pending = [(t, s) for t, s in wanted if (t.name, s) not in done]
    kept = [done[(t.name, s)] for t, s in wanted if (t.name, s) in done]
    return pending, kept


async def run_eval(
    cfg: EvalConfig,
    *,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[TrialOutcome], None] | None = None,
) -> list[TrialOutcome]:
    """Run what is pending, then write eval.json; returns every outcome (`kwrl.eval.report`
    renders report.html from the run dir).

    `on_start(total, already_done)` is called once; `on_done(outcome)` after each trial.
    """
    _check_resume(cfg)
    cfg.out.mkdir(parents=True, exist_ok=True)
    save_config(cfg, cfg.out / "eval.toml")
    rcfg = rollout_config(cfg)
    trials_dir = cfg.out / "trials"
    trials_dir.mkdir(parents=True, exist_ok=True)
    pending, outcomes = plan(cfg)
    handle = None
    if pending:
        rcfg, handle = lend_policy(rcfg, f"eval-{uuid.uuid4().hex[:8]}")
    if on_start is not None:
        on_start(len(pending) + len(outcomes), len(outcomes))
    labels: dict[str, dict[str, str | None]] = {}

    def job(task_dir: Path, sample: int) -> BatchJob:
        if cfg.sample_seed is None or rcfg.agent != KWRL_AGENT:
            return BatchJob(task_dir, sample)
        seed = trial_seed(cfg.sample_seed, task_dir.name, sample)
        own = rcfg.agent_settings.with_agent(seed=seed) if rcfg.agent_settings else None
        return BatchJob(task_dir, sample, rcfg.model_copy(update={"agent_settings": own}))

    def recover(task_dir: Path, sample: int) -> TrialRecord | None:
        return recover_or_clear(trials_dir, task_dir.name, sample, cfg.retries)

    def done(result: JobResult) -> None:
        task_dir = result.job.task_dir
        if task_dir.name not in labels:
            labels[task_dir.name] = task_labels(task_dir)
        outcome = outcome_from_record(result.final, labels[task_dir.name], cfg.out)
        append_outcome(cfg.out, outcome)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)

    try:
        await run_batch(
            [job(t, s) for t, s in pending], trials_dir, concurrency=cfg.concurrency,
            config=rcfg, recover=recover, on_done=done,
        )  # fmt: skip
    finally:
        if handle is not None:
            unregister_engine(handle)
    outcomes.sort(key=lambda o: (o.task, o.sample))
    write_eval_json(cfg.out, cfg, outcomes)
    return outcomes


def run_manifests(outcomes: list[TrialOutcome]) -> list[RunManifest]:
    """The distinct run-level manifests of `outcomes` (`RunManifest.run_part`), in order of first
    appearance: one for a run made in one go, more when a resumed run changed code or settings."""
    seen: dict[str, RunManifest] = {}
    for o in outcomes:
        if o.manifest is not None:
            part = o.manifest.run_part()
            seen.setdefault(part.model_dump_json(), part)
    return list(seen.values())


def write_eval_json(run_dir: Path, cfg: EvalConfig, outcomes: list[TrialOutcome]) -> dict[str, Any]:
    """eval.json: the config, every metric, every trial."""
    data = {
        "config": cfg.model_dump(mode="json"),
        "manifests": [m.model_dump(mode="json") for m in run_manifests(outcomes)],
        "metrics": compute_metrics(outcomes, cfg.bootstrap).model_dump(mode="json"),
        "trials": [o.model_dump(mode="json") for o in outcomes],
    }
    write_json(run_dir / "eval.json", data)
    return data


def load_run(run_dir: Path) -> tuple[EvalConfig, list[TrialOutcome]]:
    """A run dir's config and outcomes (from eval.toml and trials.jsonl)."""
    from kwrl.config import load_config

    path = run_dir / "eval.toml"
    if not path.is_file():
        raise ConfigError(f"{path}: no eval.toml: {run_dir} is not a `kwrl eval` run dir")
    return load_config(EvalConfig, path), read_outcomes(run_dir)
