"""SkyRL 0.3.0's workers on a machine without a flash-attn build.

SkyRL's model wrapper (`skyrl.backends.skyrl_train.workers.model_wrapper`, which every FSDP
worker imports) does `from flash_attn.bert_padding import pad_input, unpad_input` at import time,
even with `trainer.flash_attn=false` (attention through PyTorch's SDPA). Those two functions are
plain tensor indexing, but `flash_attn` only imports where its CUDA extension was built against
the installed torch: PyPI has no wheel of flash-attn 2.8.3 for torch 2.11 / CUDA 13, and building
it takes longer than the lent GPU's session. So where `flash_attn` cannot be imported, kwrl
provides just `flash_attn.bert_padding`, in PyTorch, to the processes that load SkyRL's model
wrapper, and nowhere else:

- `runtime_env_hook` is Ray's `RAY_RUNTIME_ENV_HOOK` (`initialize_ray` below sets it): it adds
  `setup_worker` as the cluster's `worker_process_setup_hook`;
- `setup_worker` (in every Ray worker process) puts `WrapperImportWatch` on `sys.meta_path`; when
  a process imports SkyRL's model wrapper and `flash_attn` is missing, the wrapper's module runs
  with `flash_attn` / `flash_attn.bert_padding` registered, and they are removed again once it
  has run. No other import sees a `flash_attn` (vLLM's `find_spec("flash_attn")` checks, and
  transformers' `is_flash_attn_2_available()`, which raises on a `flash_attn` it has no package
  metadata for).

FlashAttention itself stays off: with the stand-in, `trainer.flash_attn` must be false (the
stand-in has no kernels; transformers' `is_flash_attn_2_available()` reads package metadata, which
the stand-in does not fake, so it says False), and so must `trainer.remove_microbatch_padding`:
SkyRL 0.3.0's model wrapper packs micro-batches only with FlashAttention-2 (it asserts so when the
FSDP worker builds the model; `config.check_policy_model` refuses the pair before Ray starts).
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

MODEL_WRAPPER = "skyrl.backends.skyrl_train.workers.model_wrapper"
"""The SkyRL module whose import needs `flash_attn.bert_padding`."""
HOOK_ENV = "RAY_RUNTIME_ENV_HOOK"
SETUP_HOOK = "kwrl.train.skyrl.compat.setup_worker"


def unpad_input(
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor,
    unused_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, torch.Tensor]:
    """flash-attn 2.8's `bert_padding.unpad_input`: the rows of `hidden_states` (batch, seqlen,
    ...) where the mask is set, packed as (nnz, ...), with their flat indices, the cumulative
    sequence lengths (batch + 1, int32), the longest sequence and the used lengths per row."""
    all_masks = attention_mask + unused_mask if unused_mask is not None else attention_mask
    seqlens = all_masks.sum(dim=-1, dtype=torch.int32)
    used_seqlens = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(all_masks.flatten(), as_tuple=False).flatten()
    max_seqlen = int(seqlens.max().item()) if seqlens.numel() else 0
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return flat[indices], indices, cu_seqlens, max_seqlen, used_seqlens


def pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int, seqlen: int):
    """flash-attn 2.8's `bert_padding.pad_input`: the inverse of `unpad_input`, zeros elsewhere
    (differentiable with respect to `hidden_states`)."""
    rest = hidden_states.shape[1:]
    out = hidden_states.new_zeros((batch * seqlen, *rest)).index_put((indices,), hidden_states)
    return out.view(batch, seqlen, *rest)


def flash_attn_missing() -> bool:
    """True where `import flash_attn` would fail (not installed, or its extension does not load)."""
    if "flash_attn" in sys.modules:
        return getattr(sys.modules["flash_attn"], "__kwrl_stand_in__", False)
    if importlib.util.find_spec("flash_attn") is None:
        return True
    try:
        import flash_attn  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError:
        sys.modules.pop("flash_attn", None)
        return True
    return False


def install_bert_padding() -> bool:
    """Register the stand-in `flash_attn.bert_padding` where flash-attn is missing; True if so."""
    if not flash_attn_missing():
        return False
    pkg = types.ModuleType("flash_attn")
    pkg.__spec__ = importlib.machinery.ModuleSpec("flash_attn", None, is_package=True)
    pkg.__path__ = []
    pkg.__doc__ = "kwrl's stand-in for flash-attn: bert_padding only (kwrl.train.skyrl.compat)."
    mod = types.ModuleType("flash_attn.bert_padding")
    mod.__spec__ = importlib.machinery.ModuleSpec("flash_attn.bert_padding", None)
    vars(mod).update(pad_input=pad_input, unpad_input=unpad_input)
    vars(pkg).update(bert_padding=mod, __kwrl_stand_in__=True)
    sys.modules["flash_attn"] = pkg
    sys.modules["flash_attn.bert_padding"] = mod
    return True


class _StandInLoader(importlib.abc.Loader):
    """Runs SkyRL's model wrapper with the stand-in registered, then takes the stand-in away.

    While a `flash_attn` module is registered, transformers' `is_flash_attn_2_available()` (run
    when transformers loads its modeling code) raises, as no package metadata backs it. So the
    wrapper's other top-level imports run first, without the stand-in; then the wrapper itself
    runs with it (its imports are loaded by then: only `flash_attn.bert_padding` is new), and the
    stand-in is removed. The wrapper keeps its two functions; nothing else sees a `flash_attn`.
    """

    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        get_source = getattr(self.real, "get_source", None)
        source = get_source(module.__name__) if get_source is not None else None
        if source:
            _preimport(source, module)
        installed = install_bert_padding()
        try:
            self.real.exec_module(module)
        finally:
            if installed:
                sys.modules.pop("flash_attn.bert_padding", None)
                sys.modules.pop("flash_attn", None)


def _preimport(source: str, module: types.ModuleType) -> None:
    """Run a module's top-level import statements, less those of `flash_attn`, in a scratch
    namespace."""
    tree = ast.parse(source, module.__file__ or module.__name__)
    keep: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            if not any(a.name.split(".")[0] == "flash_attn" for a in node.names):
                keep.append(node)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] != "flash_attn":
            keep.append(node)
    code = compile(ast.Module(body=keep, type_ignores=[]), module.__file__ or "<wrapper>", "exec")
    exec(code, {"__name__": f"{module.__name__}.__preimport__", "__package__": module.__package__})


class WrapperImportWatch(importlib.abc.MetaPathFinder):
    """A `sys.meta_path` entry that finds SkyRL's model wrapper the usual way and, where flash-attn
    is missing, loads it through `_StandInLoader`; every other import passes by."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != MODEL_WRAPPER or not flash_attn_missing():
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _StandInLoader(spec.loader)
        return spec


def setup_worker() -> None:
    """Ray `worker_process_setup_hook`: watch for SkyRL's model wrapper in this process."""
    if not any(isinstance(f, WrapperImportWatch) for f in sys.meta_path):
        sys.meta_path.insert(0, WrapperImportWatch())


def runtime_env_hook(runtime_env: dict[str, Any] | None) -> dict[str, Any]:
    """Ray's `RAY_RUNTIME_ENV_HOOK`: the job's runtime env plus `setup_worker` as its worker set-up
    hook (an existing hook is kept, and then the stand-in is not installed)."""
    env = dict(runtime_env or {})
    env.setdefault("worker_process_setup_hook", SETUP_HOOK)
    return env


def initialize_ray(cfg: Any) -> None:
    """SkyRL's `initialize_ray(cfg)` with kwrl's worker set-up hook; the driver watches too."""
    from skyrl.train.utils.utils import initialize_ray as skyrl_initialize_ray

    os.environ.setdefault(HOOK_ENV, f"{__name__}.runtime_env_hook")
    setup_worker()
    skyrl_initialize_ray(cfg)
