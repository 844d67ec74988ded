"""`kwrl smoke`: the whole loop on the embedded defaults, on one CPU machine, in minutes.

1. generate a small open dataset (`kwrl data synth`), keeping the easy tier;
2. warm-start the packaged SmolLM2-135M with SFT on gold trajectories of the training tasks;
3. evaluate the warm-started model (real harbor trials: local sandbox, KwrlAgent, in-process engine);
4. run RL steps (GRPO + DPPO) through the same trials;
5. evaluate again, write the checkpoint, eval.json + report.html for both evaluations, and a
   before/after comparison (`kwrl report RUN/eval-after --compare RUN/eval-before`).

No network, API key or GPU is needed; every stage is the real one, only sized down.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from rich.console import Console
from rich.table import Table

from kwrl.agent.config import AgentConfig
from kwrl.config import OutputConfig, save_config
from kwrl.errors import ConfigError
from kwrl.io import write_json
from kwrl.rollout.settings import TrialSettings, table_of

SMOKE_TOOLS = [
    "filesystem_list_files",
    "excel_read_tab",
    "word_read_document_content",
    "pdfs_read_pdf_pages",
    "mail_search_mail",
    "mail_read_mail",
    "calendar_list_events",
    "chat_get_channel_history",
]


SMOKE_TRIALS: dict[str, Any] = {
    "concurrency": 8,
    "agent": {
        "tools": SMOKE_TOOLS, "max_steps": 3, "max_tokens_per_turn": 128, "context_window": 4096,
        "tool_prompt": "compact", "tool_result_max_chars": 2000,
    },
}  # fmt: skip
"""The smoke's trial sizes, taken by every trial setting a smoke config leaves unset: SmolLM2-135M
on CPU in minutes (tool results cut to 2,000 characters: CPU time goes with prompt length)."""


class SmokeConfig(TrialSettings, OutputConfig):
    """`kwrl smoke`'s config (its flags). How each trial runs comes from `TrialSettings`; a trial
    setting left unset takes the smoke's size (`SMOKE_TRIALS`: 8 trials at once, 3 agent turns of
    at most 128 tokens in a 4,096-token window, compact tool prompt, 8 read tools)."""

    out: Path = Path("runs/smoke")
    """Run dir (dataset, sft/, train/, eval-before/, eval-after/, smoke.json). A run dir of an
    earlier `kwrl smoke` goes on (its dataset and evaluations are reused); any other non-empty
    dir needs `overwrite`."""
    model: str = "smollm2-135m"
    """Packaged model name, local folder or hub id."""
    seed: int = 0
    """Seed of the generated worlds, the prompt order and sampling."""
    worlds: int = Field(default=4, ge=1)
    """Generated worlds. 4 x 12 tasks give 14 easy ones, 12 of them for SFT: enough for
    SmolLM2-135M to start with reward (2 worlds gave 4 SFT trajectories and a score of 0)."""
    tasks_per_world: int = Field(default=12, ge=1)
    """Generated tasks per world (the easy tier is kept)."""
    sft_epochs: int = Field(default=3, ge=1)
    """SFT passes over the gold trajectories."""
    rl_steps: int = Field(default=2, ge=1)
    """RL optimizer steps."""
    prompts_per_step: int = Field(default=4, ge=1)
    """Tasks per RL step."""
    samples_per_prompt: int = Field(default=4, ge=1)
    """Trials per task per RL step (a GRPO group; a group whose trials all score alike has no
    advantage and is skipped)."""
    rl_lr: float = Field(default=1e-4, gt=0)
    """RL learning rate (of the LoRA adapters when lora_rank > 0)."""
    lora_rank: int = Field(default=16, ge=0)
    """RL trains LoRA adapters of this rank (0: every weight). With a few trials a step, full
    fine-tuning moves all weights along noisy gradients and can break the tool-call format
    (docs/results/HISTORY.md, session 9)."""
    eval_samples: int = Field(default=1, ge=1)
    """Trials per task in each evaluation."""

    @model_validator(mode="before")
    @classmethod
    def _smoke_sizes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        agent = table_of(data.get("agent"))
        data["agent"] = {**SMOKE_TRIALS["agent"], **agent}
        data.setdefault("concurrency", SMOKE_TRIALS["concurrency"])
        return data


def _trials(cfg: SmokeConfig, *leave: str) -> dict[str, Any]:
    """The smoke's trial settings but `leave`, as its evaluations' and training's configs take them."""
    return {k: getattr(cfg, k) for k in TrialSettings.model_fields if k not in leave}


def easy_only(dataset: Path) -> list[str]:
    from kwrl.tasks.taskdir import read_meta

    kept = []
    for d in sorted((dataset / "tasks").iterdir()):
        if read_meta(d).difficulty == "easy":
            kept.append(d.name)
        else:
            shutil.rmtree(d)
    return kept


def evaluate_engine(
    dataset: Path,
    model_dir: Path,
    out: Path,
    agent: AgentConfig,
    *,
    n_samples: int = 1,
    concurrency: int = 4,
    sample_seed: int | None = None,
    kind: str = "engine",
    policy_config: dict[str, Any] | None = None,
    trial_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate a model folder through an in-process engine (`kind`: `engine`, or `vllm` on a
    GPU, with `policy_config` settings such as {"vllm": {...}}); returns eval.json's content.
    `trial_settings`: further `EvalConfig` fields of how trials run (e.g. sandbox).

    A finished evaluation (out/eval.json) of the same model, samples, sample seed and agent
    settings is read back, not run again; one that differs in any of them is an error (its trials
    would be mixed with these).
    """
    from kwrl.eval.report import write_report
    from kwrl.eval.run import EvalConfig, run_eval

    ecfg = EvalConfig(
        dataset=dataset, model=f"{kind}:{model_dir}", out=out, n_samples=n_samples,
        concurrency=concurrency, agent=agent, tokenizer=str(model_dir), policy=policy_config or {},
        sample_seed=sample_seed, **(trial_settings or {}),
    )  # fmt: skip
    if (out / "eval.json").is_file():
        done = json.loads((out / "eval.json").read_text())
        old = {"dataset": str(dataset), **done.get("config", {})}  # an old run's keys migrate
        was_cfg = EvalConfig.model_validate(old).model_dump(mode="json")
        want = ecfg.model_dump(mode="json")
        for key in ("model", "n_samples", "sample_seed", "agent", "tokenizer", "policy"):
            if (was := was_cfg.get(key)) != want[key]:
                raise ValueError(
                    f"{out / 'eval.json'}: config.{key} is {was!r}, not {want[key]!r}; "
                    f"remove {out} or evaluate into another folder"
                )
        return done
    asyncio.run(run_eval(ecfg))
    write_report(out)
    return json.loads((out / "eval.json").read_text())


def _eval(cfg: SmokeConfig, dataset: Path, model_dir: Path, out: Path) -> dict[str, Any]:
    return evaluate_engine(
        dataset, model_dir, out, cfg.agent, n_samples=cfg.eval_samples,
        concurrency=cfg.concurrency, sample_seed=cfg.seed, policy_config=cfg.policy,
        trial_settings=_trials(cfg, "agent", "concurrency", "tokenizer", "policy"),
    )  # fmt: skip


def _headline(ev: dict[str, Any]) -> dict[str, Any]:
    overall = ev.get("metrics", {}).get("overall", {})
    out: dict[str, Any] = {"n_trials": overall.get("n_trials")}
    for k in ("mean_score", "pass_at_1"):
        v = overall.get(k)
        out[k] = v.get("value") if isinstance(v, dict) else v
    return out


RL_STEP_KEYS = ("step", "trials", "trainable_trials", "reward_mean", "loss", "skipped", "causes")
"""What `rl_steps` keeps of a metrics line by default."""


def rl_steps(metrics: Path, keys: tuple[str, ...] = RL_STEP_KEYS) -> list[dict[str, Any]]:
    """Each RL step's `keys` (reward and loss by default) from a trainer run's metrics.jsonl, one
    record a step.

    The trainer drops the lines of steps after the checkpoint it resumes from, so a step is
    logged once; a later line for the same step still replaces an earlier one. Lines of batches
    the async trainer dropped as stale carry the last trained step's number, not a step of their
    own, and are left out.
    """
    steps: dict[int, dict[str, Any]] = {}
    if metrics.is_file():
        for line in metrics.read_text().splitlines():
            m = json.loads(line) if line.strip() else {}
            if "step" in m and "dropped_stale_batch" not in m:
                steps[m["step"]] = {k: m[k] for k in keys if k in m}
    return [steps[k] for k in sorted(steps)]


def _step_line(m: dict[str, Any]) -> str:
    reward = m.get("reward_mean")  # None: no trial of the step was trained (all masked)
    head = f"step {m['step']}: reward " + (f"{reward:.3f}" if reward is not None else "none")
    if reward is None and m.get("causes"):  # why nothing was trained
        head += f" (causes: {', '.join(f'{k} {v}' for k, v in sorted(m['causes'].items()))})"
    if "skipped" in m:
        return f"{head}, skipped ({m['skipped']})"
    trained = f"{m.get('trainable_trials')}/{m.get('trials')} trials trained"
    return f"{head}, {trained}, loss {m.get('loss', 0.0):+.4f}"


def _eval_line(h: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, int | float) else str(v)

    score, pass1 = f(h.get("mean_score")), f(h.get("pass_at_1"))
    return f"mean score {score}, pass@1 {pass1} ({h.get('n_trials')} trials)"


def smoke(cfg: SmokeConfig, console: Console | None = None) -> dict[str, Any]:
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.train.local import train
    from kwrl.train.local.config import LearnerConfig, LoRAConfig, RLConfig, TrainConfig
    from kwrl.train.local.sft import SFTConfig, sft

    console = console or Console()
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    out = cfg.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    save_config(cfg, out / "smoke.toml")

    def stage(name: str, t: float) -> None:
        timings[name] = round(time.perf_counter() - t, 1)
        console.print(f"[green]✓[/green] {name} ({timings[name]} s)")

    t = time.perf_counter()
    dataset = out / "data"
    if not (dataset / "tasks").is_dir():
        generate(
            SynthConfig(
                out=dataset, worlds=cfg.worlds, tasks_per_world=cfg.tasks_per_world, seed=cfg.seed,
                overwrite=True,
            ),
            progress=True,
        )  # fmt: skip
        easy_only(dataset)
    tasks = sorted(p.name for p in (dataset / "tasks").iterdir())
    if not tasks:
        raise ConfigError(
            f"smoke: worlds={cfg.worlds} x tasks_per_world={cfg.tasks_per_world} generated no easy "
            "task; raise tasks_per_world (about 3 in 10 tasks are easy)"
        )
    train_tasks = tasks[: max(1, len(tasks) - 2)] if len(tasks) > 2 else tasks
    stage(f"data: {len(tasks)} easy tasks ({len(train_tasks)} for training)", t)

    t = time.perf_counter()
    sft_model = sft(
        SFTConfig(
            dataset=dataset, out=out / "sft", model=cfg.model, tasks=train_tasks,
            epochs=cfg.sft_epochs, batch_size=2, lr=5e-5, seed=cfg.seed, agent=cfg.agent,
        ),
        console=console,
    )  # fmt: skip
    stage("SFT warm start", t)

    t = time.perf_counter()
    before = _eval(cfg, dataset, sft_model, out / "eval-before")
    stage("eval before RL", t)

    t = time.perf_counter()
    tcfg = TrainConfig(
        dataset=dataset, out=out / "train", model=str(sft_model), tasks=train_tasks, seed=cfg.seed,
        rl=RLConfig(
            prompts_per_step=cfg.prompts_per_step, samples_per_prompt=cfg.samples_per_prompt,
            steps=cfg.rl_steps, epochs=max(1, cfg.rl_steps), ckpt_every=cfg.rl_steps,
        ),
        learner=LearnerConfig(
            lr=cfg.rl_lr, micro_batch_size=cfg.samples_per_prompt, gradient_checkpointing=True,
            temperature=cfg.agent.temperature,  # scored as sampled (TrainConfig checks it)
        ),
        lora=LoRAConfig(rank=cfg.lora_rank), tensorboard=True, **_trials(cfg, "tokenizer"),
    )  # fmt: skip
    state = train(tcfg)
    final = out / "train" / "checkpoints" / f"step-{state.step:06d}" / "model"
    stage(f"RL: {state.step} steps", t)

    t = time.perf_counter()
    after = _eval(cfg, dataset, final, out / "eval-after")
    stage("eval after RL", t)

    t = time.perf_counter()
    from kwrl.eval.report import write_compare

    compare_path, _ = write_compare(out / "eval-after", out / "eval-before")
    stage("report", t)

    result = {
        "seconds": round(time.perf_counter() - t0, 1),
        "stages_s": timings,
        "tasks": tasks,
        "train_tasks": train_tasks,
        "before": _headline(before),
        "after": _headline(after),
        "rl": rl_steps(out / "train" / "metrics.jsonl"),
        "checkpoint": str(final),
        "reports": [
            str(out / "eval-before" / "report.html"),
            str(out / "eval-after" / "report.html"),
            str(compare_path),
        ],
    }
    write_json(out / "smoke.json", result)
    table = Table(title="kwrl smoke")
    table.add_column("what")
    table.add_column("value")
    table.add_row("before RL (SFT)", _eval_line(result["before"]))
    for m in result["rl"]:
        table.add_row("RL", _step_line(m))
    table.add_row("after RL", _eval_line(result["after"]))
    table.add_row("checkpoint", str(final))
    for r in result["reports"]:
        table.add_row("report", r)
    table.add_row("time", f"{result['seconds']} s")
    console.print(table)
    return result
