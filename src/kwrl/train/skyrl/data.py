"""kwrl task dirs -> the prompts parquet SkyRL's `PromptDataset` reads.

One row per task: `prompt` (chat messages: the task instruction as one user turn; SkyRL uses it
for its length filter and logs, the generator runs the task dir itself), `env_class` ("kwrl"),
and env extras `task_path` (absolute task dir: what the generator runs), `task_id`, `world_id`,
`domain`, and `data_source` (the domain: SkyRL's evaluation reports metrics per data source, so
APEX evaluations come out per domain). Rows are sorted by task dir name, so the file is deterministic for a dataset.

`python -m kwrl.train.skyrl.data DATASET OUT.parquet [--task SLUG]...`
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.parquet as pq
import typer

from kwrl.errors import TaskFormatError
from kwrl.tasks.taskdir import META_JSON, read_meta, task_dirs
from kwrl.train.skyrl.config import ENV_CLASS


def prompt_row(task_dir: Path) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if (task_dir / META_JSON).is_file():
        meta = read_meta(task_dir).model_dump(mode="json")
    instruction = (task_dir / "instruction.md").read_text(encoding="utf-8")
    return {
        "prompt": [{"role": "user", "content": instruction}],
        "env_class": ENV_CLASS,
        "task_path": str(task_dir.resolve()),
        "task_id": str(meta.get("task_id") or task_dir.name),
        "world_id": str(meta.get("world_id") or ""),
        "domain": str(meta.get("domain") or ""),
        "data_source": str(meta.get("domain") or "kwrl"),
    }


def write_prompts(dataset: Path, out: Path, only: list[str] | None = None) -> int:
    """Write the prompts parquet for a dataset; returns the row count."""
    rows = [prompt_row(t) for t in task_dirs(dataset, sorted(only) if only else None)]
    if not rows:
        raise TaskFormatError(dataset, None, "no task dirs (folders with instruction.md) here")
    table = pa.Table.from_pylist(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(out)
    return len(rows)


def main(
    dataset: Annotated[Path, typer.Argument(help="kwrl dataset dir (holding tasks/).")],
    out: Annotated[Path, typer.Argument(help="Output .parquet path.")],
    task: Annotated[
        list[str] | None, typer.Option(help="Only these task slugs (repeatable).")
    ] = None,
) -> None:
    """Write SkyRL's prompts parquet for a kwrl dataset."""
    n = write_prompts(dataset, out, task)
    typer.echo(f"{n} prompts -> {out}")


if __name__ == "__main__":
    typer.run(main)
