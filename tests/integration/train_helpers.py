"""Shared by the trainer's real-process tests: the CLI argv, its environment, a generated dataset
and a tiny randomly initialised policy (2-layer Llama, hidden 64, SmolLM2's tokenizer) saved as an
HF folder, so `kwrl train` / `kwrl smoke` run their real paths in seconds per step on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KWRL = [sys.executable, "-m", "kwrl.cli"]
ENV = {
    **os.environ,
    "HARBOR_TELEMETRY": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "COLUMNS": "400",
}


def synth_dataset(out: Path, *, worlds: int = 1, tasks_per_world: int = 3) -> Path:
    argv = ["data", "synth", "--out", str(out), "--worlds", str(worlds)]
    argv += ["--tasks-per-world", str(tasks_per_world)]
    proc = subprocess.run([*KWRL, *argv], capture_output=True, text=True, env=ENV, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def save_tiny_llama(out: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from kwrl.llm.packaged import ensure_tokenizer

    tok = AutoTokenizer.from_pretrained(ensure_tokenizer("smollm2-135m"))
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
