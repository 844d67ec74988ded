"""A SkyRL run's step time split into generation, training and weight sync, from its console log.

    python benchmarks/skyrl_steps.py LOG [--json FILE]

SkyRL's trainer logs a metrics block per step (`Step N:` then `'timing/generate': '18.7207',`
lines, Ray's `(_entrypoint pid=...)` prefixes and colour codes included); this reads those blocks
and prints, per step, the seconds and share of the step of generation (`timing/generate`: the
harbor trials of the batch), training (`timing/policy_train`), weight sync into the inference
engines (`timing/sync_weights`), checkpoint writing (`timing/save_checkpoints` +
`timing/save_hf_model`) and the rest, with kwrl's trial counts and mean reward. The log is what
`scripts/device/gpu_run.sh skyrl` brings back as skyrl_smoke.log
(docs/results/skyrl_smoke-h200.log holds the lent H200's smoke, trimmed to the metrics).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kwrl.io import write_json

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"\bStep (\d+):\s*$")
_STEP_DONE = re.compile(r"Finished: 'step', time cost")
_EVAL_PROGRESS = re.compile(r"Evaluation Progress:[^|]*\|[^|]*\|\s*(\d+)/(\d+)")
_METRIC = re.compile(r"'([\w/.\-]+)':\s*'?([-+0-9.eE]+)'?,?\s*$")
PARTS = {
    "generate": ("timing/generate",),
    "policy_train": ("timing/policy_train",),
    "sync_weights": ("timing/sync_weights",),
    "checkpoints": ("timing/save_checkpoints", "timing/save_hf_model"),
}


def parse(text: str) -> list[dict[str, float]]:
    """Each `Step N:` metrics block of a SkyRL console log, as {metric: value} with `step`."""
    steps: list[dict[str, float]] = []
    current: dict[str, float] | None = None
    for raw in text.splitlines():
        line = _ANSI.sub("", raw)
        if m := _STEP.search(line):
            current = {"step": float(m.group(1))}
            steps.append(current)
            continue
        if current is None:
            continue
        if m := _METRIC.search(line):
            current[m.group(1)] = float(m.group(2))
        elif "'" not in line:  # the block ended
            current = None
    return [s for s in steps if "timing/step" in s]


def steps_finished(text: str) -> int:
    """How many steps SkyRL's trainer finished: its `Finished: 'step'` lines. A step's metrics block
    is logged after that step's evaluation and export, so a run cut during its last evaluation has
    one metrics block fewer than steps trained."""
    return len(_STEP_DONE.findall(_ANSI.sub("", text)))


def eval_progress(text: str) -> tuple[int, int] | None:
    """(batches done, batches) of the last evaluation SkyRL's trainer logged progress for."""
    found = _EVAL_PROGRESS.findall(_ANSI.sub("", text))
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def split(step: dict[str, float]) -> dict[str, float]:
    """Seconds per part of one step, `other` being what the named parts leave of `timing/step`."""
    out = {k: sum(step.get(m, 0.0) for m in ms) for k, ms in PARTS.items()}
    out["other"] = max(0.0, step["timing/step"] - sum(out.values()))
    out["total"] = step["timing/step"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path, help="a SkyRL console log (skyrl_smoke.log)")
    ap.add_argument("--json", type=Path, default=None, help="write the per-step split here")
    args = ap.parse_args()
    try:
        text = args.log.read_text(errors="replace")
    except OSError as e:
        raise SystemExit(f"{args.log}: cannot read the log ({e.strerror})") from None
    steps = parse(text)
    if not steps:
        raise SystemExit(f"{args.log}: no `Step N:` block with timing/step (not a SkyRL log?)")
    table = Table(title=f"SkyRL step time split: {args.log.name}")
    for col in ("step", "trials", "mean reward", *PARTS, "other", "total"):
        table.add_column(col, justify="right")
    rows = []
    for s in steps:
        parts = split(s)
        total = parts["total"]
        cells = [f"{parts[k]:.2f} s ({parts[k] / total:.0%})" for k in (*PARTS, "other")]
        trials = s.get("kwrl/trials")
        reward = s.get("kwrl/mean_reward")
        table.add_row(
            str(int(s["step"])),
            "-" if trials is None else str(int(trials)),
            "-" if reward is None else f"{reward:.3f}",
            *cells,
            f"{total:.2f} s",
        )
        rows.append({"step": int(s["step"]), "trials": trials, "mean_reward": reward, **parts})
    Console().print(table)
    if args.json is not None:
        write_json(args.json, {"log": str(args.log), "steps": rows}, indent=1)


if __name__ == "__main__":
    main()
