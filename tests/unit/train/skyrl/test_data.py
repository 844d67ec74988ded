"""kwrl task dirs -> SkyRL prompts parquet, read back by SkyRL's own PromptDataset."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kwrl.errors import TaskFormatError
from kwrl.sandbox.conformance.testing import make_dataset
from kwrl.train.skyrl.data import write_prompts


def test_prompts_parquet_has_one_row_per_task_and_skyrls_dataset_reads_it(tmp_path: Path) -> None:
    from skyrl.train.dataset import PromptDataset
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_model

    tasks = make_dataset(tmp_path / "data", 3)
    out = tmp_path / "p" / "train.parquet"
    assert write_prompts(tmp_path / "data", out) == 3
    first = out.read_bytes()
    write_prompts(tmp_path / "data", out)
    assert out.read_bytes() == first  # deterministic

    rows = pq.read_table(out).to_pylist()
    assert [r["task_path"] for r in rows] == [str(t.resolve()) for t in sorted(tasks)]
    assert rows[0]["env_class"] == "kwrl" and rows[0]["data_source"]
    assert rows[0]["prompt"][0]["role"] == "user"
    assert rows[0]["prompt"][0]["content"] == (tasks[0] / "instruction.md").read_text()

    tok = AutoTokenizer.from_pretrained(ensure_model("smollm2-135m"))
    ds = PromptDataset([str(out)], tok, max_prompt_length=4096, num_workers=1)
    messages, env_class, extras, _uid = ds[1]
    assert env_class == "kwrl" and extras["task_path"] == str(sorted(tasks)[1].resolve())
    assert messages[0]["role"] == "user"


def test_only_selected_tasks_and_missing_ones_are_errors(tmp_path: Path) -> None:
    tasks = make_dataset(tmp_path / "data", 2)
    out = tmp_path / "one.parquet"
    assert write_prompts(tmp_path / "data", out, [tasks[1].name]) == 1
    with pytest.raises(TaskFormatError, match="nope"):
        write_prompts(tmp_path / "data", out, ["nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskFormatError, match=r"instruction\.md"):
        write_prompts(tmp_path / "empty", out)
