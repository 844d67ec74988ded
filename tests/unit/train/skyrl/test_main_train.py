"""kwrl's SkyRL experiment builds its prompt datasets with SkyRL's own PromptDataset, filtered in
`kwrl.prompt_workers` processes (one by default, not a pool of 8 per dataset), from the argv the
1-GPU launch script passes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kwrl.sandbox.conformance.testing import make_dataset
from kwrl.train.skyrl.data import write_prompts

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def _wandb_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "test")  # SkyRL's validation only checks it is set


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    from kwrl.llm.packaged import ensure_model

    env = {
        **os.environ, "KWRL_DRY_RUN": "1", "KWRL_SKYRL_ROOT": str(tmp_path / "root"),
        "MODEL": str(ensure_model("smollm2-135m")), "TOOL_CALL_PARSER": "hermes",
        "DATASET": str(tmp_path / "data"),
    }  # fmt: skip
    script = ROOT / "scripts" / "skyrl" / "smoke_1gpu.sh"
    return subprocess.run(
        ["bash", str(script), *extra], env=env, check=True, capture_output=True, text=True
    ).stdout.splitlines()


def test_prompt_datasets_are_skyrls_own_filtered_in_one_process(tmp_path: Path) -> None:
    from skyrl.train.dataset import PromptDataset
    from transformers import AutoTokenizer

    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_train import KwrlExp, load

    make_dataset(tmp_path / "data", 3)
    train, val = tmp_path / "train.parquet", tmp_path / "val.parquet"
    write_prompts(tmp_path / "data", train)
    write_prompts(tmp_path / "data", val)
    cfg = load(_argv(
        tmp_path, f"data.train_data=['{train}']", f"data.val_data=['{val}']",
        "trainer.eval_interval=2",
    ))  # fmt: skip
    assert kwrl_section(cfg).prompt_workers == 1
    exp = object.__new__(KwrlExp)  # no Ray: only the dataset half of its start
    exp.cfg = cfg
    exp.tokenizer = AutoTokenizer.from_pretrained(cfg.trainer.policy.model.path)
    got = exp.get_train_dataset()
    assert isinstance(got, PromptDataset) and got.num_workers == 1 and len(got) == 3
    messages, env_class, extras, _ = got[0]
    assert env_class == "kwrl" and messages[0]["role"] == "user" and extras["task_path"]
    ev = exp.get_eval_dataset()
    assert isinstance(ev, PromptDataset) and len(ev) == 3

    exp.cfg = load(_argv(tmp_path, f"data.train_data=['{train}']", "trainer.train_batch_size=4",
                         "trainer.policy_mini_batch_size=4", "kwrl.prompt_workers=2"))  # fmt: skip
    assert exp.get_eval_dataset() is None  # the smoke script evaluates nothing
    with pytest.raises(ValueError, match=r"3 prompts, fewer than trainer\.train_batch_size"):
        exp.get_train_dataset()
