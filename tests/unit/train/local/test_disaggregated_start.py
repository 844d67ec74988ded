"""A generation worker that cannot start fails a disaggregated run at once, naming the worker,
instead of leaving the trainer waiting in a rendezvous or a collective (real spawned processes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from kwrl.errors import ConfigError, TrainError
from kwrl.train.local.config import DisaggregatedConfig, RLConfig, TrainConfig


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from kwrl.llm.packaged import ensure_tokenizer

    try:
        tok = AutoTokenizer.from_pretrained(ensure_tokenizer("smollm2-135m"))
    except ConfigError as e:
        pytest.skip(f"packaged SmolLM2 tokenizer unavailable: {e}")
    out = tmp_path_factory.mktemp("start-model") / "tiny"
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_a_worker_that_cannot_load_its_engine_fails_the_run(
    tiny_model: Path, tmp_path: Path
) -> None:
    from kwrl.train.local.disaggregated import DisaggregatedTrainer

    task = tmp_path / "ds" / "tasks" / "t1"
    task.mkdir(parents=True)
    (task / "instruction.md").write_text("Say hi.\n")
    cfg = TrainConfig(
        dataset=tmp_path / "ds",
        out=tmp_path / "run",
        model=str(tiny_model),
        tensorboard=False,
        rl=RLConfig(mode="disaggregated"),
        disaggregated=DisaggregatedConfig(
            generation_devices=["no-such-device"], worker_threads=1, start_timeout_s=240
        ),
    )
    trainer = DisaggregatedTrainer(cfg, console=Console(quiet=True))
    assert trainer.backend == "gloo"
    with pytest.raises(TrainError, match="kwrl-gen-1"):
        asyncio.run(trainer._loop())
    assert trainer._procs and not any(p.is_alive() for p in trainer._procs)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
