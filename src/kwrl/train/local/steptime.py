"""Where an RL step's time went, and how busy the GPU was meanwhile.

A sync step is sampling (the batch's harbor trials: sandbox start, agent turns on the engine, tool
calls, grading, all overlapped across `concurrency` trials), then learning (the learner's
forward/backward and optimizer step), then the weight push into the engine. The trainer measures
the wall-clock seconds of those three (`sample_s`, `learner_s`, `push_s`). Because the trials
overlap, their own phases cannot be split out of `sample_s` by subtraction; `trial_split` adds up
instead, over the batch's trials, the seconds each spent in harbor's phases (sandbox set-up, agent,
verifier: the grading) and, inside the agent, waiting on the policy (generation) and on tool
calls. Their ratios say which part fills the sampling wall time.

`GpuBusy` polls the GPU's utilisation (NVML, through `torch.cuda.utilization`: the share of the
last sample period in which any kernel ran) from a daemon thread every `period_s`; `mean(since)`
averages the polls taken since a `mark()`. Where NVML or a GPU is missing it reads None, never an
error: a busy share is a figure to print, not something a run may fail on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kwrl.rollout.trial import read_trial

TRIAL_PHASES = {
    "environment_setup": "trial_setup_s",
    "agent_setup": "trial_setup_s",
    "agent_execution": "trial_agent_s",
    "verifier": "trial_grading_s",
}
"""harbor phase -> the key of `trial_split` its seconds add to."""


def trial_split(trial_dirs: Iterable[Path | str]) -> dict[str, float]:
    """Seconds the trials in `trial_dirs` spent, summed over trials, in each part of a trial.

    Keys: `trial_setup_s` (sandbox and agent set-up), `trial_agent_s` (the agent's run),
    `trial_grading_s` (the verifier), `trial_policy_s` (of the agent's run: waiting on the policy
    for its turns, i.e. generation), `trial_tools_s` (of the agent's run: tool calls), and
    `completion_tokens` (tokens the policy sampled).
    """
    out = dict.fromkeys(
        (*dict.fromkeys(TRIAL_PHASES.values()), "trial_policy_s", "trial_tools_s"), 0.0
    )
    out["completion_tokens"] = 0.0
    for d in trial_dirs:
        files = read_trial(d)
        for phase, secs in files.phase_seconds.items():
            out[TRIAL_PHASES[phase]] += secs
        for turn in files.turn_stats:
            out["trial_policy_s"] += turn.latency_s
            out["trial_tools_s"] += turn.tool_latency_s
            out["completion_tokens"] += turn.completion_tokens
    return {k: round(v, 3) for k, v in out.items()}


class GpuBusy:
    """Polls `torch.cuda.utilization(device)` in a daemon thread (module doc)."""

    def __init__(self, device: str, period_s: float = 0.5) -> None:
        self.device = device
        self.period_s = period_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self._read() is not None:
            self._thread = threading.Thread(target=self._poll, name="kwrl-gpu-busy", daemon=True)
            self._thread.start()

    def _read(self) -> float | None:
        import torch

        if not self.device.startswith("cuda") or not torch.cuda.is_available():
            return None
        try:  # NVML may be missing or refuse (a container without the driver's library)
            return float(torch.cuda.utilization(torch.device(self.device)))
        except Exception:
            return None

    def _poll(self) -> None:
        while not self._stop.wait(self.period_s):
            v = self._read()
            if v is not None:
                self.samples.append(v)

    @property
    def active(self) -> bool:
        return self._thread is not None

    def mark(self) -> int:
        """An index to average from (`mean`)."""
        return len(self.samples)

    def mean(self, since: int) -> float | None:
        """Mean busy share (0..1) of the polls since `since`; None when not polling or none yet."""
        got = self.samples[since:]
        return round(sum(got) / len(got) / 100.0, 3) if got else None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def step_times(
    sample_s: float, learner_s: float, push_s: float, graded: int, *, wall_s: float | None = None
) -> dict[str, Any]:
    """A step's wall-clock split and its graded trials per hour of that wall time (learner and
    weight push included). `wall_s`: the step's own wall time where sampling overlapped the
    learner (async mode), else it is sampling + learner + push."""
    step_s = sample_s + learner_s + push_s if wall_s is None else wall_s
    per_hour = graded * 3600.0 / step_s if step_s > 0 else None
    return {
        "step_s": round(step_s, 3),
        "sample_s": round(sample_s, 3),
        "learner_s": round(learner_s, 3),
        "push_s": round(push_s, 3),
        "graded": graded,
        "graded_trials_per_hour": round(per_hour, 1) if per_hour is not None else None,
    }
