"""The HTML report of an evaluation run, and the comparison of two runs.

`write_report(run_dir)` recomputes the metrics from the run's trials.jsonl (so a report of a
partial or resumed run is always current), rewrites eval.json and renders `report.html`:
headline numbers, plots (score distribution, per-group bars with bootstrap intervals, reward
against turns and tokens, tool mix, failure causes) and a trajectory viewer with every trial's
turns, tool calls and results, final answer and each criterion's verdict with its rationale.

`write_compare(run_dir, other_dir)` writes `compare.json` and `compare.html` into run_dir: paired
differences (run - other) on the tasks both ran, task-bootstrapped.

Non-obvious choices: the page is one self-contained file that works offline: plots are matplotlib
SVG inlined in the HTML (no JS library, no CDN), the viewer is nested `<details>` elements (no
script needed to collapse). Long tool results are cut to `max_result_chars` in the page; the full
text stays in the trial dir's trajectory.json. Labels are data the policy writes (tool names) and
are drawn as plain text (matplotlib's mathtext off: a tool named `$\\frac{$` once made `kwrl eval`
exit without a report); the tool mix shows the most used tools, one bar for the rest, and one for
calls to tools the agent did not have (`UNKNOWN_TOOL`); a plot that fails anyway is a line saying
so, and the page is written without it.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kwrl.eval.metrics import (
    UNKNOWN_TOOL,
    EvalMetrics,
    ScoreSummary,
    ToolUse,
    TrialOutcome,
    compute_metrics,
    paired_diff,
    scored,
)
from kwrl.eval.run import EvalConfig, load_run, run_manifests, write_eval_json
from kwrl.io import write_json, write_text
from kwrl.rollout.settings import HARBOR_AGENTS

TEMPLATES = Path(__file__).parent / "templates"
MAX_RESULT_CHARS = 3000
_BLUE, _ORANGE, _GREY = "#3b6ea8", "#e08a2c", "#999999"
_NO_METADATA: dict[str, Any] = {"Date": None, "Creator": None, "Format": None, "Type": None}


# ---------------------------------------------------------------- plots


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata=_NO_METADATA)
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _figure(w: float = 6.0, h: float = 3.2) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "kwrl"
    matplotlib.rcParams["text.parse_math"] = False  # labels are data (tool names): plain text
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(w, h))


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", color=_GREY, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def plot_scores(outcomes: Sequence[TrialOutcome]) -> str:
    """The scored trials' scores; a trial that failed on infrastructure has no score and is left
    out (the title counts it), never drawn as 0 (the policy's own failures are its 0s)."""
    fig, ax = _figure()
    scores = [o.score for o in scored(outcomes)]
    ungraded = len(outcomes) - len(scores)
    if scores:
        ax.hist(scores, bins=[i / 10 for i in range(11)], color=_BLUE, edgecolor="white")
        ax.set_xlim(0, 1)
        ax.set_xlabel("score (fraction of criteria met)")
        ax.set_ylabel("trials")
    else:
        _empty(ax, "no graded trials" if outcomes else "no trials")
    ax.set_title("score distribution" + (f" ({ungraded} ungraded left out)" if ungraded else ""))
    return _svg(fig)


def plot_groups(groups: dict[str, ScoreSummary], title: str) -> str:
    """Mean score and Pass@1 per group, with their bootstrap intervals as error bars."""
    fig, ax = _figure(6.0, 3.2)
    labels = list(groups)
    if not labels:
        _empty(ax, "no groups")
        ax.set_title(title)
        return _svg(fig)
    x = list(range(len(labels)))
    for offset, name, color in ((-0.2, "mean_score", _BLUE), (0.2, "pass_at_1", _ORANGE)):
        iv = [getattr(groups[g], name) for g in labels]
        vals = [i.value or 0.0 for i in iv]
        err = [
            [max(0.0, (i.value or 0.0) - (i.lo or 0.0)) for i in iv],
            [max(0.0, (i.hi or 0.0) - (i.value or 0.0)) for i in iv],
        ]
        label = "mean score" if name == "mean_score" else "Pass@1"
        ax.bar([p + offset for p in x], vals, 0.4, yerr=err, capsize=3, color=color, label=label)
    rotate = len(labels) > 3
    ax.set_xticks(
        x, [f"{g}\n(n={groups[g].n_tasks})" for g in labels], fontsize=7 if rotate else 8,
        rotation=25 if rotate else 0, ha="right" if rotate else "center",
    )  # fmt: skip
    ax.set_xlim(-0.7, max(len(labels), 2.5) - 0.3)
    ax.set_ylim(0, 1.22)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.legend(fontsize=8, loc="upper center", ncol=2, frameon=False)
    ax.set_title(title)
    return _svg(fig)


def plot_reward_vs(outcomes: Sequence[TrialOutcome], what: str, agent: str = "") -> str:
    """Graded trials' scores against their turns or tokens; `agent` (`agent_label`) says whose
    trials recorded none."""
    fig, ax = _figure(4.6, 3.2)
    graded = scored(outcomes)
    if what == "turns":
        pts = [(o.turns, o.score) for o in graded if o.turns is not None]
    else:
        pts = [
            ((o.input_tokens or 0) + (o.output_tokens or 0), o.score)
            for o in graded
            if o.input_tokens is not None or o.output_tokens is not None
        ]
    if pts:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=_BLUE, alpha=0.7)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("turns" if what == "turns" else "tokens (prompt + completion)")
        ax.set_ylabel("score")
    else:
        _empty(ax, f"no {what} recorded" + (f" ({agent})" if agent else ""))
    ax.set_title(f"score against {what}")
    return _svg(fig)


MAX_TOOL_BARS = 30
"""Tools the tool-mix plot shows by name, most used first; the rest share one bar."""


def tool_bars(mix: dict[str, ToolUse]) -> dict[str, ToolUse]:
    """The tool mix as plotted: the `MAX_TOOL_BARS` most used tools, then one bar for the rest,
    and the calls to tools the agent did not have (`UNKNOWN_TOOL`) last."""
    ranked = sorted(mix.items(), key=lambda kv: (kv[0] == UNKNOWN_TOOL, -kv[1].calls, kv[0]))
    named = [(n, u) for n, u in ranked if n != UNKNOWN_TOOL]
    out = dict(named[:MAX_TOOL_BARS])
    if rest := named[MAX_TOOL_BARS:]:
        out[f"({len(rest)} other tools)"] = ToolUse(
            calls=sum(u.calls for _, u in rest), ok=sum(u.ok for _, u in rest)
        )
    if UNKNOWN_TOOL in mix:
        out[UNKNOWN_TOOL] = mix[UNKNOWN_TOOL]
    return out


def plot_tool_mix(metrics: EvalMetrics) -> str:
    mix = tool_bars(metrics.trials.tool_mix)
    fig, ax = _figure(6.0, max(2.2, 0.3 * len(mix) + 1))
    if mix:
        names = list(mix)[::-1]
        ok = [mix[n].ok for n in names]
        bad = [mix[n].calls - mix[n].ok for n in names]
        ax.barh(names, ok, color=_BLUE, label="ok")
        ax.barh(names, bad, left=ok, color=_ORANGE, label="failed")
        ax.set_xlabel("calls")
        ax.legend(fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    else:
        _empty(ax, "no tool calls recorded")
    ax.set_title("tool mix")
    return _svg(fig)


def plot_causes(metrics: EvalMetrics) -> str:
    """Trials per failure cause; the trials that did not fail (`none`) have no bar."""
    causes = {k: n for k, n in metrics.trials.causes.items() if k != "none"}
    fig, ax = _figure(4.6, 3.2)
    if causes:
        names = list(causes)
        ax.bar(names, [causes[n] for n in names], color=_ORANGE)
        ax.tick_params(axis="x", labelsize=8, rotation=20)
        ax.set_ylabel("trials")
    else:
        _empty(ax, "no trial failed" if metrics.trials.causes else "no trials")
    ax.set_title("failure causes")
    return _svg(fig)


def plot_paired(per_task: dict[str, dict[str, float]]) -> str:
    fig, ax = _figure(6.0, max(2.2, 0.28 * len(per_task) + 1))
    if per_task:
        names = list(per_task)[::-1]
        diffs = [per_task[n]["diff"] for n in names]
        ax.barh(names, diffs, color=[_BLUE if d >= 0 else _ORANGE for d in diffs])
        ax.axvline(0, color="black", lw=0.8)
        ax.set_xlim(-1.05, 1.05)
        ax.set_xlabel("mean score: run - other")
        ax.tick_params(axis="y", labelsize=7)
    else:
        _empty(ax, "no shared tasks")
    ax.set_title("per-task difference")
    return _svg(fig)


# ---------------------------------------------------------------- the viewer


def _cut(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... [{len(text) - limit} more characters in trajectory.json]"


def trial_steps(trial_dir: Path, max_chars: int = MAX_RESULT_CHARS) -> list[dict[str, Any]]:
    """The ATIF steps of a trial as plain dicts for the template (empty without a trajectory)."""
    path = trial_dir / "agent" / "trajectory.json"
    try:
        traj = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    steps: list[dict[str, Any]] = []
    for s in traj.get("steps") or []:
        calls = [
            {
                "name": c.get("function_name", ""),
                "arguments": _cut(
                    json.dumps(c.get("arguments"), ensure_ascii=False, indent=1), max_chars
                ),
            }
            for c in s.get("tool_calls") or []
        ]
        results = [
            _cut(str(r.get("content") or ""), max_chars)
            for r in (s.get("observation") or {}).get("results") or []
        ]
        tools = ((s.get("metrics") or {}).get("extra") or {}).get("tools") or []
        for call, stat in zip(calls, tools, strict=False):
            call["outcome"] = stat.get("outcome", "")
        steps.append(
            {
                "source": s.get("source", ""),
                "message": _cut(str(s.get("message") or ""), max_chars),
                "reasoning": _cut(str(s.get("reasoning_content") or ""), max_chars),
                "calls": calls,
                "results": results,
            }
        )
    return steps


def _trial_view(run_dir: Path, o: TrialOutcome) -> dict[str, Any]:
    trial_dir = Path(o.trial_dir)
    if not trial_dir.is_absolute():
        trial_dir = run_dir / trial_dir
    oracle = trial_dir / "agent" / "oracle.txt"
    return {
        "o": o,
        "steps": trial_steps(trial_dir),
        "agent_log": _cut(oracle.read_text(errors="replace")) if oracle.is_file() else "",
    }


# ---------------------------------------------------------------- rendering


def agent_label(cfg: EvalConfig) -> str:
    """The agent that ran a run's trials: harbor's oracle or nop, else kwrl's agent and its model."""
    if cfg.model in HARBOR_AGENTS:
        return f"harbor's {cfg.model} agent"
    return f"kwrl's agent, model {cfg.model}"


def run_label(cfg: EvalConfig, run_dir: Path) -> str:
    """A run as a compare names it: its model, the environment its trials ran in, its dir."""
    return f"{cfg.model} ({cfg.sandbox.environment}, {run_dir})"


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    env.filters["num"] = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
    return env


def _plot(name: str, draw: Callable[[], str]) -> str:
    """A plot's SVG, or a line saying it failed and why: a figure that cannot be drawn (a label
    matplotlib rejects, a value it cannot place) costs that figure, never the report."""
    try:
        return draw()
    except Exception as e:  # deliberate: any plotting fault
        import matplotlib.pyplot as plt

        plt.close("all")
        why = html.escape(f"{type(e).__name__}: {e}"[:300])
        return f'<p class="plot-error">the {html.escape(name)} plot failed: {why}</p>'


def render_report(
    run_dir: Path, cfg: EvalConfig, outcomes: Sequence[TrialOutcome], metrics: EvalMetrics
) -> str:
    draws: dict[str, Callable[[], str]] = {
        "scores": lambda: plot_scores(outcomes),
        "domain": lambda: plot_groups(metrics.by_domain, "by domain"),
        "expected_output": lambda: plot_groups(metrics.by_expected_output, "by expected output"),
        "difficulty": lambda: plot_groups(metrics.by_difficulty, "by difficulty"),
        "turns": lambda: plot_reward_vs(outcomes, "turns", agent_label(cfg)),
        "tokens": lambda: plot_reward_vs(outcomes, "tokens", agent_label(cfg)),
        "tools": lambda: plot_tool_mix(metrics),
        "causes": lambda: plot_causes(metrics),
    }
    plots = {name: _plot(name, draw) for name, draw in draws.items()}
    groups = {
        "domain": metrics.by_domain,
        "expected output": metrics.by_expected_output,
        "difficulty": metrics.by_difficulty,
    }
    return _env().get_template("report.html.j2").render(
        cfg=cfg, m=metrics, plots=plots, groups=groups, manifests=run_manifests(list(outcomes)),
        agent=agent_label(cfg),
        trials=[_trial_view(run_dir, o) for o in outcomes],
    )  # fmt: skip


def write_report(run_dir: Path) -> Path:
    """Recompute eval.json from the run's outcomes and render report.html; returns its path."""
    run_dir = Path(run_dir)
    cfg, outcomes = load_run(run_dir)
    write_eval_json(run_dir, cfg, outcomes)
    metrics = compute_metrics(outcomes, cfg.bootstrap)
    path = run_dir / "report.html"
    write_text(path, render_report(run_dir, cfg, outcomes, metrics))
    return path


def write_compare(run_dir: Path, other_dir: Path) -> tuple[Path, dict[str, Any]]:
    """compare.json and compare.html (run - other, paired on shared tasks) in run_dir."""
    cfg, run = load_run(Path(run_dir))
    other_cfg, other = load_run(Path(other_dir))
    diff = paired_diff(run, other, cfg.bootstrap)
    data = {
        "run": {
            "dir": str(run_dir),
            "model": cfg.model,
            "environment": cfg.sandbox.environment,
            "label": run_label(cfg, Path(run_dir)),
        },
        "other": {
            "dir": str(other_dir),
            "model": other_cfg.model,
            "environment": other_cfg.sandbox.environment,
            "label": run_label(other_cfg, Path(other_dir)),
        },
        "run_metrics": compute_metrics(run, cfg.bootstrap).overall.model_dump(mode="json"),
        "other_metrics": compute_metrics(other, cfg.bootstrap).overall.model_dump(mode="json"),
        "paired": diff.model_dump(mode="json"),
    }
    write_json(Path(run_dir) / "compare.json", data)
    plot = _plot("per-task difference", lambda: plot_paired(diff.per_task))
    page = (
        _env()
        .get_template("compare.html.j2")
        .render(cfg=cfg, other_cfg=other_cfg, d=diff, data=data, plot=plot)
    )
    path = Path(run_dir) / "compare.html"
    write_text(path, page)
    return path, data
