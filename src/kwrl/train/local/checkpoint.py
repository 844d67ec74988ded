"""Checkpoints in HF format with optimizer and trainer state; exact resume.

    RUN/checkpoints/step-000005/
        model/              save_pretrained (the full model; with LoRA, merged) + tokenizer
        adapter/            with LoRA: peft's adapter files, resumed onto the base weights
        optimizer.pt        optimizer state dict
        trainer_state.json  step, policy version, sampler state, RNG seeds, metrics so far
    RUN/checkpoints/latest  name of the newest complete checkpoint

Each checkpoint is written to a temp dir and renamed, and `latest` is updated last, so a crash
mid-save leaves the previous checkpoint as the one resumed from (a dir named `step-NNNNNN` is
always complete, so `latest_checkpoint` falls back to the highest one if `latest`'s is gone).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field

from kwrl.io import atomic_dir, write_json, write_text
from kwrl.train.local.sampler import SamplerState


class TrainerState(BaseModel):
    step: int = 0
    """Optimizer steps completed."""
    version: int = 0
    """Policy weight version (equals step for the local learner)."""
    sampler: SamplerState = Field(default_factory=SamplerState)
    torch_rng: list[int] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


def save_checkpoint(
    run_dir: Path,
    state: TrainerState,
    model: Any,
    optimizer: torch.optim.Optimizer,
    tokenizer: Any | None = None,
    *,
    adapter: Any | None = None,
    state_dict: dict[str, torch.Tensor] | None = None,
) -> Path:
    """`state_dict`: what model/ holds instead of `model`'s own (LoRA: the merged weights);
    `adapter`: a peft model whose adapter goes to adapter/."""
    name = f"step-{state.step:06d}"
    final = run_dir / "checkpoints" / name
    with atomic_dir(final) as tmp:
        # A copy: save_pretrained drops tied duplicates from the dict it is given.
        sd = dict(state_dict) if state_dict is not None else None
        model.save_pretrained(tmp / "model", safe_serialization=True, state_dict=sd)
        if adapter is not None:
            adapter.save_pretrained(tmp / "adapter")
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp / "model")
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        st = state.model_copy()
        st.torch_rng = torch.get_rng_state().tolist()
        write_json(tmp / "trainer_state.json", st.model_dump(mode="json"))
    write_text(run_dir / "checkpoints" / "latest", name + "\n")
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint to resume from: `latest`'s, else the highest complete `step-*` dir.

    The fallback covers a kill while the dir `latest` names was being replaced (atomic_dir moves
    the old one aside first); only renamed, hence complete, dirs match the name.
    """
    root = run_dir / "checkpoints"
    marker = root / "latest"
    if marker.exists():
        path = root / marker.read_text().strip()
        if (path / "trainer_state.json").exists():
            return path
    done = sorted(
        p
        for p in root.glob("step-*")
        if re.fullmatch(r"step-\d{6}", p.name) and (p / "trainer_state.json").exists()
    )
    return done[-1] if done else None


def load_trainer_state(ckpt: Path) -> TrainerState:
    state = TrainerState.model_validate(json.loads((ckpt / "trainer_state.json").read_text()))
    if state.torch_rng:
        torch.set_rng_state(torch.tensor(state.torch_rng, dtype=torch.uint8))
    return state


def load_optimizer(ckpt: Path, optimizer: torch.optim.Optimizer) -> None:
    optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))
