"""Every writer, typed as a user types it, under one rule (`kwrl.io.claim_output`): `--out` naming
an existing file, a dir of the user's, the verb's input itself, or `.` (the dir holding the input)
is refused with one line naming the flag that allows it, and nothing anywhere changes, byte for
byte; an overwrite replaces only what kwrl wrote. Run through `kwrl.cli.main`, the console
script's entry, in a working directory of its own with relative paths.

Before, `kwrl data pack D --out notes.txt` deleted the file, `--out keep` deleted keep/a.txt,
`kwrl data pack D/tasks --out D` deleted the dataset, `--out .` ended in a traceback, and `eval`,
`trial run`, `rollout`, `synth`, `extract` printed a 50-line traceback for an existing file."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "tasks"))
from cli_helpers import kwrl, snapshot
from tasks_builders import make_apex_layout

from kwrl.io import OUTPUT_MARKER

needs_bwrap = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's working dir: a generated dataset D (1 world, 2 tasks), its bundle B, an APEX
    layout APEX, notes.txt, and keep/ holding keep/a.txt."""
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.tasks.bundles import pack_bundles

    cwd = tmp_path_factory.mktemp("user")
    generate(
        SynthConfig(out=cwd / "D", worlds=1, tasks_per_world=2, seed=3, workers=1, control=False),
        progress=False,
    )
    pack_bundles(cwd / "D", cwd / "B")
    make_apex_layout(cwd / "APEX")
    (cwd / "notes.txt").write_text("my notes\n")
    (cwd / "keep").mkdir()
    (cwd / "keep" / "a.txt").write_text("keep me\n")
    return cwd


def task(work: Path) -> str:
    return "D/tasks/" + sorted(p.name for p in (work / "D" / "tasks").iterdir())[0]


# (verb, argv with OUT where --out goes, its input (none: the dataset D stands in), the flag
# that allows a non-empty dir)
WRITERS: list[tuple[str, list[str], str, str]] = [
    ("data synth", ["data", "synth", "--out", "OUT", "--worlds", "1", "--no-control"], "",
     "--overwrite"),
    ("data convert", ["data", "convert", "--from", "apex-hf", "APEX", "--out", "OUT", "-q"],
     "APEX", "--overwrite"),
    ("data extract", ["data", "extract", "B", "--out", "OUT", "-q"], "B", "--overwrite"),
    ("data pack", ["data", "pack", "D", "--out", "OUT", "-q"], "D", "--overwrite"),
    ("rollout", ["rollout", "D", "--model", "oracle", "--out", "OUT"], "D", "--overwrite"),
    ("eval", ["eval", "D", "--model", "oracle", "--out", "OUT"], "D", "--overwrite"),
    ("train", ["train", "-", "dataset=D", "out=OUT"], "D", "overwrite=true"),
    ("train sft", ["train", "sft", "-", "dataset=D", "out=OUT"], "D", "overwrite=true"),
    ("smoke", ["smoke", "--out", "OUT"], "", "--overwrite"),
    ("sandbox conform", ["sandbox", "conform", "--work", "OUT"], "", "--overwrite"),
    ("trial run", ["trial", "run", "TASK", "--model", "oracle", "--out", "OUT"], "TASK", ""),
]  # fmt: skip
CASES = {
    "an existing file": ("notes.txt", "is an existing file"),
    "a dir of the user's": ("keep", "kwrl did not write what it holds; pass FLAG"),
    "the input itself": ("INPUT", ""),
    "the current dir": (".", ""),
}


def _argv(argv: list[str], out: str, work: Path) -> list[str]:
    sub = {"TASK": task(work)}
    return [a.replace("OUT", out) if "OUT" in a else sub.get(a, a) for a in argv]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("verb", "argv", "given", "flag"), WRITERS, ids=[w[0] for w in WRITERS])
def test_a_refused_out_changes_nothing_and_says_so_in_one_line(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    argv: list[str],
    given: str,
    flag: str,
    case: str,
) -> None:
    out, expected = CASES[case]
    if verb == "trial run" and case == "a dir of the user's":
        pytest.skip("trial run adds a new trial dir beside what is there: next test")
    if not given and case == "the input itself":  # a verb without input, given a dataset
        out, expected = "D", "earlier `kwrl data synth`; pass --overwrite"
    if not given and case == "the current dir":
        expected = CASES["a dir of the user's"][1]
    out = {"INPUT": task(work) if given == "TASK" else given}.get(out, out)
    flag_name = next((f for f, v in itertools.pairwise(argv) if v == "OUT"), "out")
    expected = expected.replace("FLAG", flag) or (
        "is the input" if case == "the input itself" else "holds the input"
    )
    before = snapshot(work)
    code, stdout, stderr = kwrl(work, _argv(argv, out, work), capsys, monkeypatch)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, stdout + stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert f"{flag_name} {out}: " in lines[0] and expected in lines[0], lines[0]
    assert "Traceback" not in stdout + stderr
    assert snapshot(work) == before


def test_an_overwrite_replaces_only_what_kwrl_wrote(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pack, extract, convert and synth with --overwrite into keep/: their files beside a.txt,
    nothing outside keep/ changed; a second overwrite by another verb replaces the first's."""
    before = {k: v for k, v in snapshot(work).items() if not k.startswith("keep")}
    for argv in (
        ["data", "pack", "D", "--out", "keep", "--overwrite", "-q"],
        ["data", "extract", "B", "--out", "keep", "--overwrite", "-q"],
        ["data", "convert", "--from", "apex-hf", "APEX", "--out", "keep", "--overwrite", "-q"],
        ["data", "synth", "--out", "keep", "--worlds", "1", "--no-control", "--overwrite"],
    ):
        code, stdout, stderr = kwrl(work, argv, capsys, monkeypatch, umask=0o022)
        assert code == 0, stdout + stderr
        assert (work / "keep" / "a.txt").read_text() == "keep me\n"
        assert {k: v for k, v in snapshot(work).items() if not k.startswith("keep")} == before
        if argv[1] == "pack":  # outputs are 0644 under umask 022 (0600 before)
            shards = sorted((work / "keep").glob("*.parquet"))
            assert shards and {stat.S_IMODE(p.stat().st_mode) for p in shards} == {0o644}
    (world_json,) = (work / "keep" / "worlds").glob("*/world.json")
    assert stat.S_IMODE(world_json.stat().st_mode) == 0o644
    assert sorted(p.name for p in (work / "keep").iterdir()) == [
        OUTPUT_MARKER, "a.txt", "tasks", "worlds"
    ]  # fmt: skip
    shutil.rmtree(work / "keep")
    (work / "keep").mkdir()
    (work / "keep" / "a.txt").write_text("keep me\n")


def test_report_refuses_what_is_not_a_run_dir(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(work)
    for run in ("notes.txt", "keep", "D", "."):
        code, _, stderr = kwrl(work, ["report", run], capsys, monkeypatch)
        assert code == 2 and stderr.strip() == (
            f"error: RUN_DIR {run}: not a `kwrl eval` run dir (no eval.toml)"
        )
    assert snapshot(work) == before


@needs_bwrap
def test_trial_run_and_grade_write_beside_what_is_there(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kwrl trial run --out keep` adds its trial dir and changes nothing else; `kwrl grade
    --write --out` refuses a file, keep/, the trial itself and `.`, changing nothing."""
    before = snapshot(work)
    code, stdout, stderr = kwrl(
        work, ["trial", "run", task(work), "--model", "oracle", "--out", "keep"], capsys,
        monkeypatch,
    )  # fmt: skip
    assert code == 0, stdout + stderr
    (trial,) = [p for p in (work / "keep").iterdir() if p.is_dir()]
    after = snapshot(work)
    assert {k: v for k, v in after.items() if not k.startswith(f"keep/{trial.name}")} == before
    assert stat.S_IMODE(trial.stat().st_mode) & 0o022 == 0  # harbor made it 0777
    assert stat.S_IMODE((trial / "verifier").stat().st_mode) & 0o002 == 0
    trial_arg = f"keep/{trial.name}"
    (work / "mine").mkdir()
    (work / "mine" / "b.txt").write_text("mine\n")
    after = snapshot(work)
    for out, message in (
        ("notes.txt", "is an existing file"),
        ("mine", "kwrl did not write what it holds; pass --overwrite"),
        (trial_arg, "is the input"),
        (".", "holds the input"),
    ):
        code, stdout, stderr = kwrl(
            work, ["grade", trial_arg, "--write", "--out", out], capsys, monkeypatch
        )
        assert code == 2 and stderr.startswith(f"error: --out {out}: ") and message in stderr, (
            stdout + stderr
        )
        assert snapshot(work) == after
    shutil.rmtree(trial)
    shutil.rmtree(work / "mine")
