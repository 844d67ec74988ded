"""`kwrl eval`'s config: `EvalConfig` (its flags, RUN_DIR/eval.toml) and the report's `Bootstrap`.

A module of its own, importing neither numpy nor the engine, so that the `kwrl` command builds
`kwrl eval`'s flags from it (`kwrl.cli_config`) without loading what the evaluation runs with.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from kwrl.config import KwrlConfig, OutputConfig
from kwrl.rollout.settings import TrialSettings


class Bootstrap(KwrlConfig):
    """Bootstrap settings of every interval in a report."""

    n_boot: int = Field(default=2000, ge=1)
    """Resamples per interval."""
    seed: int = 0
    """Seed of the resampling (the same seed gives the same intervals)."""
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    """Coverage of the percentile interval."""


class EvalConfig(TrialSettings, OutputConfig):
    """One evaluation run (`kwrl eval`'s flags): which model, on which tasks, how many samples,
    where the results go; how each trial runs (concurrency, agent, policy, judge, sandbox) comes
    from `kwrl.rollout.settings.TrialSettings`, as in every verb's config."""

    dataset: Path
    """A dataset dir (tasks/*), a dir of task dirs, or one task dir."""
    model: str
    """`oracle`, `nop`, or a KwrlAgent policy spec (http://HOST:PORT/v1#NAME, litellm:..., engine:...)."""
    out: Path = Path("runs/eval")
    """Run dir: trials/, trials.jsonl, eval.json, report.html. A run dir of an earlier `kwrl
    eval` is resumed; any other non-empty dir needs `overwrite`."""
    n_samples: int = Field(default=1, ge=1)
    """Trials per task (k of pass@k and pass^k goes up to this)."""
    sample_seed: int | None = None
    """Seeded sampling (KwrlAgent): trial (task, sample) samples with `trial_seed(sample_seed, task,
    sample)`. Two models evaluated with the same seed draw the same random numbers (common random
    numbers), so their paired comparison (`kwrl report --compare`) is less noisy. None: unseeded."""
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    """Interval settings of the report."""


class ReportConfig(KwrlConfig):
    """`kwrl report`'s config (its flags)."""

    compare: Path | None = None
    """Another run dir: paired differences (compare.json, compare.html)."""
