"""Recipe bundles: task dirs as parquet shards, one row per dir (DESIGN §3b).

A shard has two columns: `path` (the dir name, one path component) and `task_binary` (a gzip
tar of the dir's contents, member names relative to the dir). `extract_bundles` unpacks every row
into `<out>/<path>` through `archive.extract_tar` (so unsafe members are refused and the size cap
holds across all rows); `pack_bundles` is its inverse and is deterministic: rows sorted by path,
tars from `archive.pack_tar_gz`, one row group per shard, so pack -> extract -> pack gives the
same bytes. Bundles made by other tools may wrap each dir in a top folder named `path`; that
folder is stripped.

A source is a local `.parquet` file, a folder of them (searched recursively), or a Hugging Face
dataset id (`org/name`), fetched with `huggingface_hub.snapshot_download(allow_patterns=*.parquet)`.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from kwrl.errors import TaskFormatError, UnsafeArchiveError
from kwrl.io import atomic_dir, write_bytes
from kwrl.tasks.archive import DEFAULT_MAX_BYTES, ByteBudget, extract_tar, member_path, pack_tar_gz
from kwrl.tasks.hub import fetch_dataset, looks_like_repo_id
from kwrl.tasks.progress import progress_bar

COLUMNS = ("path", "task_binary")


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


def extract_bundles(
    shards: list[Path],
    out: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    overwrite: bool = False,
    progress: bool = False,
) -> list[str]:
    """Extract every row of `shards` into `out/<path>`; returns the dir names. All or nothing."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise TaskFormatError(out, None, "output dir exists and is not empty (pass --overwrite)")
    budget = ByteBudget(max_bytes)
    seen: dict[str, str] = {}
    with atomic_dir(out) as tmp, progress_bar(progress, "extract") as bar:
        tmp.chmod(0o755)  # mkdtemp makes 0o700
        for shard in shards:
            for row, path, blob in iter_rows(shard):
                name = _row_dir_name(shard, row, path)
                where = f"{shard} row {row}"
                if name in seen:
                    raise TaskFormatError(
                        shard, f"row {row}.path", f"duplicate path {name!r} (also {seen[name]})"
                    )
                seen[name] = where
                top = _top_dir(blob)
                extract_tar(
                    blob, tmp / name, budget, source=where, strip=top if top == name else None
                )
                bar(1)
    return sorted(seen)


def pack_bundles(
    src: Path,
    out: Path,
    *,
    rows_per_shard: int = 256,
    prefix: str = "train",
    progress: bool = False,
) -> list[Path]:
    """Pack each immediate subdir of `src` as one row; shards `<prefix>-00000-of-0000N.parquet`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rows_per_shard < 1:
        raise TaskFormatError(src, "rows_per_shard", "must be >= 1")
    dirs = sorted(p for p in Path(src).iterdir() if p.is_dir() and not p.name.startswith("."))
    if not dirs:
        raise TaskFormatError(src, None, "no dirs to pack")
    chunks = [dirs[i : i + rows_per_shard] for i in range(0, len(dirs), rows_per_shard)]
    schema = pa.schema([("path", pa.string()), ("task_binary", pa.binary())])
    written: list[Path] = []
    with atomic_dir(Path(out)) as tmp, progress_bar(progress, "pack", len(dirs)) as bar:
        tmp.chmod(0o755)  # mkdtemp makes 0o700
        for i, chunk in enumerate(chunks):
            blobs: list[bytes] = []
            for d in chunk:
                blobs.append(pack_tar_gz(d))
                bar(1)
            table = pa.table({"path": [d.name for d in chunk], "task_binary": blobs}, schema=schema)
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, row_group_size=len(chunk), compression="zstd")
            name = f"{prefix}-{i:05d}-of-{len(chunks):05d}.parquet"
            write_bytes(tmp / name, sink.getvalue().to_pybytes())
            written.append(Path(out) / name)
    return written
