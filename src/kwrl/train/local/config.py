"""The single-machine trainer's config (`kwrl train CONFIG.toml [key=value ...]`).

Imports no torch, so configs parse (and are tested) cheaply. Defaults are the recipe's hero
hyperparameters scaled to one CPU: DPPO (delta 0.15/0.15), GRPO advantages without std
normalisation, zero-variance groups dropped, prompt_mean reduction, no KL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from kwrl.config import KwrlConfig
from kwrl.llm.engine import EngineConfig
from kwrl.train.local.learner import LearnerConfig


class RLConfig(KwrlConfig):
    prompts_per_step: int = Field(default=2, ge=1)
    """Tasks (GRPO groups) per optimizer step (recipe: 16)."""
    samples_per_prompt: int = Field(default=2, ge=1)
    """Trials per task, the group size (recipe: 16)."""
    steps: int = Field(default=2, ge=1)
    """Optimizer steps to run (stops earlier when the epochs are used up)."""
    epochs: int = Field(default=1, ge=1)
    """Passes over the training tasks."""
    mode: Literal["sync", "async"] = "sync"
    """sync: generate then learn; async: generation overlaps learning, bounded by max_staleness."""
    max_staleness: int = Field(default=1, ge=0)
    """async: a batch sampled by policy version v trains only while learner version - v <= this."""
    norm_adv_by_std: bool = False
    """Divide GRPO advantages by the group's std (the recipe does not)."""
    drop_zero_variance: bool = True
    """Drop groups whose trials all got the same reward (no signal)."""
    ckpt_every: int = Field(default=1, ge=1)
    """Save a checkpoint every this many steps (and at the end)."""


class TrainConfig(KwrlConfig):
    """Everything one `kwrl train` run needs; saved resolved as RUN/config.toml."""

    dataset: Path
    """A task-dirs dataset (DATASET/tasks/<slug>/ and DATASET/worlds/)."""
    out: Path = Path("runs/train")
    """Run dir: checkpoints/, rollouts/, metrics.jsonl, tb/, config.toml."""
    model: str = "smollm2-135m"
    """Initial weights: a packaged model name, a local HF folder (e.g. an SFT checkpoint) or a hub id."""
    tokenizer: str | None = None
    """Tokenizer (packaged name or folder); default: the model's."""
    tasks: list[str] | None = None
    """Task slugs to train on; default: every task in the dataset."""
    seed: int = 0
    """Seed of the prompt order and of torch."""
    rl: RLConfig = Field(default_factory=RLConfig)
    """Batch shape, mode and schedule."""
    learner: LearnerConfig = Field(default_factory=lambda: LearnerConfig(lr=1e-5))
    """Optimizer and loss."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """The in-process sampling engine (its `model` is set by the trainer)."""
    agent: dict[str, Any] = Field(
        default_factory=lambda: {"max_steps": 6, "max_tokens_per_turn": 256, "context_window": 6144}
    )
    """KwrlAgent settings (AgentConfig fields), e.g. max_steps, tools, temperature."""
    concurrency: int = Field(default=4, ge=1)
    """Trials running at once."""
    environment: str = "local"
    """Trial environment: local (bubblewrap sandbox), docker, modal, or an import path."""
    environment_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the environment."""
    tensorboard: bool = True
    """Also write metrics to RUN/tb for TensorBoard."""
