"""Held-out evaluations along a training run (`TrainConfig.heldout`, `HeldoutConfig`).

The trainer evaluates the policy it is training on tasks of worlds it never trains on, at step 0
(the initial weights, e.g. the SFT warm start), every `heldout.every` steps and at the last step.
Each evaluation is a `kwrl eval` run (`kwrl.eval.run.run_eval`: real harbor trials, the grader,
eval.json and report.html) whose policy is the trainer's own engine, lent to the trials as
`live:HANDLE`: it holds the weights just pushed, so no second engine (nor a second vLLM on the
GPU) is loaded, and nothing is reloaded from a checkpoint. The handle is derived from the run dir,
so a run killed mid-evaluation resumes that evaluation's missing trials (`kwrl eval`'s own resume)
under the same policy spec. With `sample_seed` set, trial (task, k) draws the same random numbers
at every evaluation, so two evaluations pair by task (`kwrl report --compare`).

    RUN/heldout/step-NNNNNN/   eval.json, report.html, trials/, seconds.json
    RUN/heldout.jsonl          one line per finished evaluation (rewritten from the dirs above)
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from kwrl.io import write_json, write_text
from kwrl.llm.engines import register_engine, unregister_engine
from kwrl.llm.spec import live_spec
from kwrl.rollout.settings import TrialSettings
from kwrl.train.local.config import TrainConfig


def heldout_dir(run_dir: Path, step: int) -> Path:
    return run_dir / "heldout" / f"step-{step:06d}"


def is_due(cfg: TrainConfig, step: int, *, last: bool) -> bool:
    """Whether the policy after `step` steps is evaluated (`last`: the run's final step)."""
    h = cfg.heldout
    if h.dataset is None:
        return False
    return step == 0 or last or (h.every > 0 and step % h.every == 0)


def is_done(run_dir: Path, step: int) -> bool:
    return (heldout_dir(run_dir, step) / "eval.json").is_file()


def handle_of(run_dir: Path) -> str:
    """The engine handle of a run's held-out evaluations: the same for every process of the run."""
    return "heldout-" + hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]


def eval_config(cfg: TrainConfig, step: int, policy_dir: Path) -> Any:
    """The `EvalConfig` of the evaluation after `step` steps (policy `live:HANDLE`)."""
    from kwrl.eval.run import EvalConfig

    h = cfg.heldout
    trials = {k: getattr(cfg, k) for k in TrialSettings.model_fields if k != "tokenizer"}
    if h.temperature is not None:
        agent = cfg.agent.model_dump(mode="json", exclude_unset=True)
        trials["agent"] = {**agent, "temperature": h.temperature}
    if h.concurrency is not None:
        trials["concurrency"] = h.concurrency
    return EvalConfig(
        **trials,
        dataset=h.dataset,  # type: ignore[arg-type]  # is_due checked it is set
        model=live_spec(handle_of(cfg.out)),
        out=heldout_dir(cfg.out, step),
        n_samples=h.n_samples,
        tokenizer=str(policy_dir),
        sample_seed=h.sample_seed,
    )


async def evaluate(cfg: TrainConfig, engine: Any, step: int, policy_dir: Path) -> dict[str, Any]:
    """Evaluate `engine` (holding the weights after `step` steps) on the held-out tasks; returns
    the heldout.jsonl line. An evaluation already finished is read back, not run again."""
    from kwrl.eval.report import write_report
    from kwrl.eval.run import run_eval

    out = heldout_dir(cfg.out, step)
    if not is_done(cfg.out, step):
        ecfg = eval_config(cfg, step, policy_dir)
        handle = handle_of(cfg.out)
        register_engine(handle, engine)
        t0 = time.perf_counter()
        try:
            await run_eval(ecfg)
        finally:
            unregister_engine(handle)
        write_report(out)
        write_json(out / "seconds.json", {"step": step, "seconds": time.perf_counter() - t0})
    write_summary(cfg.out)
    return summary_line(cfg.out, step)


def summary_line(run_dir: Path, step: int) -> dict[str, Any]:
    """heldout.jsonl's line of the finished evaluation after `step` steps."""
    out = heldout_dir(run_dir, step)
    ev = json.loads((out / "eval.json").read_text())
    overall = ev["metrics"]["overall"]
    secs = out / "seconds.json"
    return {
        "step": step,
        "mean_score": overall["mean_score"],
        "pass_at_1": overall["pass_at_1"],
        "n_trials": overall["n_trials"],
        "n_graded": overall.get("n_graded"),
        "causes": ev["metrics"]["trials"]["causes"],
        "seconds": json.loads(secs.read_text())["seconds"] if secs.is_file() else None,
        "dir": str(out),
    }


def finished_steps(run_dir: Path) -> list[int]:
    """Steps whose held-out evaluation finished, in order."""
    return sorted(
        int(p.parent.name.removeprefix("step-"))
        for p in (run_dir / "heldout").glob("step-*/eval.json")
    )


def write_summary(run_dir: Path) -> Path:
    """RUN/heldout.jsonl from every finished evaluation's dir (so a rerun never duplicates one)."""
    lines = [json.dumps(summary_line(run_dir, s)) + "\n" for s in finished_steps(run_dir)]
    path = run_dir / "heldout.jsonl"
    write_text(path, "".join(lines))
    return path
