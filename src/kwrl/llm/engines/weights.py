"""How the in-process engine's weights change: wait for the batch, or land between two steps.

`update_weights` / `load_weights` wait for the running batch (which admits no more rows while an
update waits, so it drains), copy tensors in place and bump `weight_version`. `stage_weights` (the
disaggregated trainer's path, as SkyRL's in-flight weight sync) never waits for a batch: the
decode loop applies the staged tensors between two decode steps (`_apply_staged`), then
re-prefills every live row under the new weights (`batching.py`), so the next token's logprob is
exactly what a fresh forward of the new model over that prefix gives. Every change empties the
prefix store first: KV of old weights is never reused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kwrl.errors import ConfigError
from kwrl.llm.engines.core import EngineCore, Staged

if TYPE_CHECKING:
    import torch


class Weights(EngineCore):
    """The engine's weight updates (see the module doc)."""

    def _check_state(self, state_dict: Mapping[str, torch.Tensor], what: str) -> None:
        own = self.model.state_dict()
        unknown = [k for k in state_dict if k not in own]
        if unknown:
            raise ConfigError(f"{what}: unknown parameter names {unknown[:5]}")
        wrong = [k for k, v in state_dict.items() if tuple(v.shape) != tuple(own[k].shape)]
        if wrong:
            k = wrong[0]
            raise ConfigError(
                f"{what}: {k}: shape {tuple(state_dict[k].shape)} != {tuple(own[k].shape)}"
            )

    def _copy_in(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        import torch

        own = self.model.state_dict()
        with torch.no_grad():
            for k, v in state_dict.items():
                own[k].copy_(v.to(device=own[k].device, dtype=own[k].dtype))

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        """Copy `state_dict` (all or some parameters) into the model between batches.

        Returns the new `weight_version`. Unknown names or shape mismatches raise ConfigError
        before anything is copied.
        """
        self._check_state(state_dict, "update_weights")
        with self._stage_lock:
            self._updates_waiting += 1  # the running batch admits no more rows: it drains
        try:
            with self._lock:
                self._prefix.clear()  # first: a copy that fails halfway leaves mixed weights too
                self._copy_in(state_dict)
                self.weight_version += 1
                return self.weight_version
        finally:
            with self._stage_lock:
                self._updates_waiting -= 1

    def stage_weights(
        self, state_dict: Mapping[str, torch.Tensor], version: int | None = None
    ) -> concurrent.futures.Future[int]:
        """Apply `state_dict` at the next decode step of the running batch (or now, when idle).

        The future resolves to the new `weight_version` (`version` if given, else the current
        one + 1) once the tensors are in the model; the caller must not modify them before.
        Updates staged before one lands are merged (later tensors win, the last version wins).
        """
        self._check_state(state_dict, "stage_weights")
        fut: concurrent.futures.Future[int] = concurrent.futures.Future()
        with self._stage_lock:
            if self._staged is None:
                self._staged = Staged({}, None, [])
            self._staged.tensors.update(state_dict)
            self._staged.version = version
            self._staged.futures.append(fut)
        # Idle engine: apply here. Busy: the decode loop (or the end of the batch) applies it.
        if self._lock.acquire(blocking=False):
            try:
                self._apply_staged()
            finally:
                self._lock.release()
        return fut

    def _apply_staged(self) -> bool:
        """Land the staged update; the caller holds `_lock`. False when nothing was staged."""
        with self._stage_lock:
            staged, self._staged = self._staged, None
        if staged is None:
            return False
        self._prefix.clear()
        try:
            self._copy_in(staged.tensors)
        except Exception as e:
            for f in staged.futures:
                f.set_exception(e)
            raise
        self.weight_version = (
            staged.version if staged.version is not None else self.weight_version + 1
        )
        self.stats["staged_updates"] += 1
        for f in staged.futures:
            f.set_result(self.weight_version)
        return True

    async def aupdate_weights(self, state_dict: Mapping[str, torch.Tensor]) -> int:
        return await asyncio.to_thread(self.update_weights, state_dict)

    def load_weights(self, path: Path | str) -> int:
        """Load a safetensors file, or every `*.safetensors` in a folder, into the model."""
        from safetensors.torch import load_file

        p = Path(path)
        files = sorted(p.glob("*.safetensors")) if p.is_dir() else [p]
        if not files or not all(f.is_file() for f in files):
            raise ConfigError(f"load_weights: {p}: no safetensors file found")
        state: dict[str, torch.Tensor] = {}
        for f in files:
            state.update(load_file(str(f)))
        own = self.model.state_dict()
        # Tied embeddings: a checkpoint may carry lm_head.weight that the model folds away.
        if "lm_head.weight" not in own:
            state.pop("lm_head.weight", None)
        return self.update_weights(state)
