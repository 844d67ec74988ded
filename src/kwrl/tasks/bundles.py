"""Recipe bundles: task dirs as parquet shards, one row per dir.

A shard has two columns: `path` (the dir name, one path component) and `task_binary` (a gzip
tar of the dir's contents, member names relative to the dir): the recipe's bundle layout.
`extract_bundles` unpacks every row through `archive.extract_tar` (so unsafe members are refused
and the size cap holds across all rows); `pack_bundles` is its inverse and is deterministic: rows
sorted by path, tars from `archive.pack_tar_gz`, one row group per shard, so pack -> extract ->
pack gives the same bytes. Bundles made by other tools may wrap each dir in a top folder named
`path`; that folder is stripped.

A dataset travels whole: `pack_bundles(D)` writes one row per task dir of `D/tasks` in the task
shards (`<prefix>-00000-of-0000N.parquet`, the split the recipe's loaders read) and one row per
world seed of `D/worlds` in shards of their own, `worlds-00000-of-0000M.parquet` (same columns,
`path` = the world id): worlds are shared by their tasks, never copied into each task's row.
`extract_bundles` restores such a source as a dataset (`<out>/tasks/<path>`, `<out>/worlds/<path>`)
and a source without world shards (task bundles, the recipe's own) as `<out>/<path>`. The input of
a pack is a dataset dir, or a folder of task dirs that hold everything they read; a folder whose
tasks read a world outside it (`D/tasks` alone) is refused, saying to pack the dataset instead.

A source is a local `.parquet` file, a folder of them (searched recursively), or a Hugging Face
dataset id (`org/name`), fetched with `huggingface_hub.snapshot_download(allow_patterns=*.parquet)`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import Field

from kwrl.config import ByteSize, OutputConfig
from kwrl.errors import TaskFormatError, UnsafeArchiveError
from kwrl.io import claim_output, write_bytes
from kwrl.tasks.archive import DEFAULT_MAX_BYTES, ByteBudget, extract_tar, member_path, pack_tar_gz
from kwrl.tasks.hub import fetch_dataset, looks_like_repo_id
from kwrl.tasks.progress import progress_bar

COLUMNS = ("path", "task_binary")
WORLDS_SPLIT = "worlds"
"""The split (shard name prefix) of a dataset bundle's worlds, and the dataset's worlds dir."""


class BundleRun(OutputConfig):
    """What `kwrl data extract` and `kwrl data pack` share: where they write, how they show."""

    out: Path
    """Dir receiving the result."""
    quiet: bool = False
    """No progress bar."""


class ExtractConfig(BundleRun):
    """`kwrl data extract`'s config (its flags)."""

    out: Path
    """Dir receiving the dataset (or one dir per row)."""
    max_bytes: ByteSize = DEFAULT_MAX_BYTES
    """Cap on the bytes unpacked in total (e.g. 20GiB, 500MB)."""
    revision: str | None = None
    """HF dataset revision."""


class PackConfig(BundleRun):
    """`kwrl data pack`'s config (its flags)."""

    out: Path
    """Dir receiving the parquet shards."""
    rows_per_shard: int = Field(default=256, ge=1)
    """Rows per parquet shard."""
    prefix: str = "train"
    """Task shards' file name prefix (split name)."""


def resolve_source(src: str | Path, *, revision: str | None = None) -> list[Path]:
    """The parquet shards of `src`: a file, a folder (recursive) or a HF dataset id."""
    p = Path(src)
    if p.is_file():
        return [p]
    if p.is_dir():
        shards = sorted(p.rglob("*.parquet"))
        if not shards:
            raise TaskFormatError(p, None, "no *.parquet shards in this folder")
        return shards
    if looks_like_repo_id(src):
        return resolve_source(fetch_dataset(str(src), ["*.parquet"], revision=revision))
    raise TaskFormatError(
        src, None, "not a parquet file, a folder of shards, or a HF dataset id (org/name)"
    )


def iter_rows(shard: Path, batch_size: int = 16) -> Iterator[tuple[int, str, bytes]]:
    """(row index, path, task_binary) of every row of a shard, streamed in small batches."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(shard)
    except Exception as e:  # pyarrow raises ArrowInvalid/OSError for a bad file
        raise TaskFormatError(shard, None, f"not a readable parquet file: {e}") from None
    names = pf.schema_arrow.names
    for col in COLUMNS:
        if col not in names:
            raise TaskFormatError(shard, col, f"missing column (have {names})")
    row = 0
    for batch in pf.iter_batches(batch_size=batch_size, columns=list(COLUMNS)):
        paths = batch.column(0).to_pylist()
        blobs = batch.column(1).to_pylist()
        for path, blob in zip(paths, blobs, strict=True):
            if not isinstance(path, str) or not path:
                raise TaskFormatError(shard, f"row {row}.path", "empty or not a string")
            if not isinstance(blob, bytes | bytearray):
                raise TaskFormatError(shard, f"row {row}.task_binary", "empty or not binary")
            yield row, path, bytes(blob)
            row += 1


def _row_dir_name(shard: Path, row: int, path: str) -> str:
    rel = member_path(path, f"{shard} row {row}")
    if len(rel.parts) != 1 or str(rel) == ".":
        raise UnsafeArchiveError(shard, f"row {row}.path", f"{path!r} must be a single dir name")
    return rel.parts[0]


def _top_dir(blob: bytes) -> str | None:
    """The single top folder every member of a row's tar sits in, if any (wrapped bundles)."""
    import tarfile

    tops: set[str] = set()
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tf:
            for m in tf:
                parts = [p for p in m.name.split("/") if p not in ("", ".")]
                if not parts:
                    continue
                tops.add(parts[0])
                if len(tops) > 1 or (len(parts) == 1 and not m.isdir()):
                    return None
    except Exception:  # a corrupt tar is reported by extract_tar with its member
        return None
    return tops.pop() if len(tops) == 1 else None


def is_world_shard(shard: Path) -> bool:
    """A shard of a dataset bundle's worlds (`worlds-*.parquet`), not of its tasks."""
    return shard.name.startswith(f"{WORLDS_SPLIT}-")


def extract_bundles(
    shards: list[Path],
    out: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    overwrite: bool = False,
    source: Path | None = None,
    progress: bool = False,
) -> list[str]:
    """Extract every row of `shards` into `out` (module doc: a dataset when there are world
    shards, else `out/<path>`); returns the dir names written, `tasks/...` and `worlds/...` for a
    dataset. All or nothing; `out` is claimed first (`kwrl.io.claim_output`: neither a shard nor
    the local `source` they came from may be in it or hold it)."""
    inputs = [*([source] if source is not None else []), *shards]
    output = claim_output(Path(out), "kwrl data extract", overwrite=overwrite, inputs=inputs)
    budget = ByteBudget(max_bytes)
    dataset = any(is_world_shard(s) for s in shards)
    seen: dict[str, str] = {}
    with output.staged() as tmp, progress_bar(progress, "extract") as bar:
        for shard in shards:
            base = (WORLDS_SPLIT if is_world_shard(shard) else "tasks") if dataset else ""
            for row, path, blob in iter_rows(shard):
                name = _row_dir_name(shard, row, path)
                key = f"{base}/{name}" if base else name
                where = f"{shard} row {row}"
                if key in seen:
                    raise TaskFormatError(
                        shard, f"row {row}.path", f"duplicate path {name!r} (also {seen[key]})"
                    )
                seen[key] = where
                top = _top_dir(blob)
                dest = tmp / base / name if base else tmp / name
                extract_tar(blob, dest, budget, source=where, strip=top if top == name else None)
                bar(1)
    return sorted(seen)


def _not_packable(src: Path, why: str) -> TaskFormatError:
    return TaskFormatError(
        src, None, f"{why}; `kwrl data pack` takes a dataset dir (tasks/, worlds/) or a folder of "
        "task dirs that hold all they read",
    )  # fmt: skip


def _subdirs(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))


def pack_inputs(src: Path) -> tuple[list[Path], list[Path]]:
    """(task dirs, world dirs) that `pack_bundles(src)` packs, or a `TaskFormatError` saying why
    `src` cannot round-trip: not a dataset nor a folder of task dirs, or tasks whose world seed
    lies outside it."""
    from kwrl.tasks.taskdir import INSTRUCTION, META_JSON, read_meta, world_dir_of

    src = Path(src)
    if not src.is_dir():
        raise TaskFormatError(src, None, "not a dir")
    if (src / INSTRUCTION).is_file():
        raise _not_packable(src, "is one task dir")
    dataset = (src / "tasks").is_dir()
    if dataset:
        extra = sorted(
            p.name for p in src.iterdir()
            if not p.name.startswith(".") and p.name not in ("tasks", WORLDS_SPLIT)
        )  # fmt: skip
        if extra:
            raise TaskFormatError(
                src, extra[0], "a dataset bundle carries tasks/ and worlds/ only: move it away"
            )
    tasks = _subdirs(src / "tasks" if dataset else src)
    worlds = _subdirs(src / WORLDS_SPLIT) if dataset and (src / WORLDS_SPLIT).is_dir() else []
    if src.name == WORLDS_SPLIT and (src.parent / "tasks").is_dir():
        raise _not_packable(src, f"holds a dataset's worlds, not tasks: pack {src.parent}")
    if not tasks:
        raise _not_packable(src, "no task dirs")
    if not dataset and (src / WORLDS_SPLIT).is_dir():
        raise _not_packable(src, "has worlds/ but no tasks/")
    inside = [d.resolve() for d in worlds]
    for t in tasks:
        if not (t / INSTRUCTION).is_file():
            raise _not_packable(t, f"not a task dir (no {INSTRUCTION})")
        if not (t / META_JSON).is_file():
            continue  # a harbor task dir of its own (its environment inside it)
        meta = read_meta(t)
        world = world_dir_of(t, meta).resolve()
        if world in inside or world.is_relative_to(t.resolve()):
            continue
        home = f"the dataset {src.parent}" if src.name == "tasks" else "its dataset"
        raise TaskFormatError(
            t, "world", f"its world seed ({meta.world_dir or '../../worlds/' + meta.world_id}) is "
            f"outside {src}, so a bundle of it would lose the world: pack {home} instead",
        )  # fmt: skip
    return tasks, worlds


def _write_shards(
    dirs: list[Path], prefix: str, dest: Path, rows_per_shard: int, bar: Callable[[int], None]
) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunks = [dirs[i : i + rows_per_shard] for i in range(0, len(dirs), rows_per_shard)]
    schema = pa.schema([("path", pa.string()), ("task_binary", pa.binary())])
    names: list[str] = []
    for i, chunk in enumerate(chunks):
        blobs: list[bytes] = []
        for d in chunk:
            blobs.append(pack_tar_gz(d))
            bar(1)
        table = pa.table({"path": [d.name for d in chunk], "task_binary": blobs}, schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=len(chunk), compression="zstd")
        name = f"{prefix}-{i:05d}-of-{len(chunks):05d}.parquet"
        write_bytes(dest / name, sink.getvalue().to_pybytes())
        names.append(name)
    return names


def pack_bundles(
    src: Path,
    out: Path,
    *,
    rows_per_shard: int = 256,
    prefix: str = "train",
    overwrite: bool = False,
    progress: bool = False,
) -> list[Path]:
    """Pack the dataset (or folder of task dirs) `src` into shards in `out` (module doc):
    `<prefix>-00000-of-0000N.parquet` for its tasks, `worlds-00000-of-0000M.parquet` for its
    worlds. `out` is claimed first (`kwrl.io.claim_output`)."""
    if rows_per_shard < 1:
        raise TaskFormatError(src, "rows_per_shard", "must be >= 1")
    if prefix == WORLDS_SPLIT or not prefix or "/" in prefix:
        raise TaskFormatError(src, "prefix", f"{prefix!r}: name the tasks' split (e.g. train)")
    tasks, worlds = pack_inputs(src)
    output = claim_output(Path(out), "kwrl data pack", overwrite=overwrite, inputs=[src])
    with output.staged() as tmp, progress_bar(progress, "pack", len(tasks) + len(worlds)) as bar:
        names = _write_shards(tasks, prefix, tmp, rows_per_shard, bar)
        if worlds:
            names += _write_shards(worlds, WORLDS_SPLIT, tmp, rows_per_shard, bar)
    return [Path(out) / n for n in names]
