"""Shared by the `gpu`-marked tests: whether this machine can run them (CUDA and vLLM)."""

from __future__ import annotations


def cuda_and_vllm() -> bool:
    """True where a CUDA device and vLLM are both present (docs/gpu.md)."""
    try:
        import torch
        import vllm  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError:
        return False
    return torch.cuda.is_available()
