"""Same seed -> byte-identical dataset, in both layouts; a different seed -> different bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwrl.synth.generate import SynthConfig, generate


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(("layout", "worlds"), [("task-dirs", 3), ("apex-hf", 1)])
def test_same_seed_gives_identical_bytes(tmp_path: Path, layout: str, worlds: int) -> None:
    trees = []
    for run in ("a", "b"):
        out = tmp_path / run
        cfg = SynthConfig(
            out=out, worlds=worlds, tasks_per_world=6, seed=11, layout=layout, workers=2
        )  # type: ignore[arg-type]
        generate(cfg, progress=False)
        trees.append(tree_bytes(out))
    a, b = trees
    assert len(a) >= 3
    assert sorted(a) == sorted(b)
    differing = [k for k in a if a[k] != b[k]]
    assert not differing, differing[:10]


def test_different_seed_gives_different_worlds(tmp_path: Path) -> None:
    generate(
        SynthConfig(
            out=tmp_path / "a", worlds=1, tasks_per_world=2, seed=1, layout="apex-hf", workers=1
        ),
        progress=False,
    )
    generate(
        SynthConfig(
            out=tmp_path / "b", worlds=1, tasks_per_world=2, seed=2, layout="apex-hf", workers=1
        ),
        progress=False,
    )
    assert tree_bytes(tmp_path / "a") != tree_bytes(tmp_path / "b")
