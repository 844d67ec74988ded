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
from kwrl.tasks.taskdir import META_JSON, read_meta
from kwrl.train.skyrl.config import ENV_CLASS


def task_dirs(dataset: Path, only: list[str] | None = None) -> list[Path]:
    """Task dirs of a dataset (`DATASET/tasks/*` or DATASET itself holding task dirs)."""
    root = dataset / "tasks" if (dataset / "tasks").is_dir() else dataset
    if not root.is_dir():
        raise TaskFormatError(str(dataset), "tasks", "not a directory")
    found = {p.name: p for p in sorted(root.iterdir()) if (p / "instruction.md").is_file()}
    if not found:
        raise TaskFormatError(str(root), "instruction.md", "no task dirs (folders with it) here")
    if only:
        missing = sorted(set(only) - set(found))
        if missing:
            raise TaskFormatError(str(root), "tasks", f"not found: {', '.join(missing)}")
        return [found[k] for k in sorted(only)]
    return list(found.values())


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
    rows = [prompt_row(t) for t in task_dirs(dataset, only)]
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
