"""The eval report renders in headless Chromium, offline: plots and the trajectory viewer show.

The run dir is built from real trial files (tests/unit/eval/eval_testkit.py); the page is loaded
from file:// with networking off. `--dump-dom` shows what the browser parsed; the screenshot is
checked region by region for the plots' bar colours and the viewer's verdict colours.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "eval"))
from eval_testkit import make_run, make_task_dir

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BLUE, ORANGE = (0x3B, 0x6E, 0xA8), (0xE0, 0x8A, 0x2C)
PASS_GREEN, FAIL_RED = (0x1A, 0x7F, 0x37), (0xC0, 0x39, 0x2B)

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium not installed")


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


def count_near(img: object, box: tuple[int, int, int, int], rgb: tuple[int, int, int]) -> int:
    """Pixels within a small distance of `rgb` inside `box` (left, top, right, bottom)."""
    region = img.crop(box).convert("RGB")  # type: ignore[attr-defined]
    return sum(
        1 for p in region.getdata() if sum(abs(a - b) for a, b in zip(p, rgb, strict=True)) < 30
    )


def test_report_renders_plots_and_viewer_in_headless_chromium(tmp_path: Path) -> None:
    from PIL import Image

    from kwrl.eval.report import write_report

    task_dir = make_task_dir(tmp_path)
    run = make_run(tmp_path / "run", task_dir, "http://127.0.0.1:1/v1#smollm2", [1.0, 1 / 3, 0.0])
    page = write_report(run).resolve().as_uri()

    dom = chromium(tmp_path, "--dump-dom", page).stdout
    assert dom.count("<svg") == 8 and dom.count('class="trial"') == 3
    assert 'id="mean-score">44.4%<' in dom and "filesystem_list_files" in dom

    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,6000", page)
    img = Image.open(shot)
    assert img.size == (1400, 6000)
    # Headline cards at the top, the eight plots below them: bars in both colours.
    plots = (0, 250, 1400, 2000)
    assert count_near(img, plots, BLUE) > 20000
    assert count_near(img, plots, ORANGE) > 5000
    # The viewer at the bottom: one PASS, two FAIL verdicts, the first trial opened with its
    # steps (agent steps have a blue left border).
    viewer_top = next(
        y for y in range(5999, 0, -1) if count_near(img, (0, y, 400, y + 1), PASS_GREEN) > 0
    )
    assert count_near(img, (0, 2000, 1400, 6000), FAIL_RED) > 50
    assert count_near(img, (0, viewer_top, 60, 6000), BLUE) > 100
    blank = Image.new("RGB", (1400, 200), "white")
    assert img.crop((0, 0, 1400, 200)).convert("RGB").tobytes() != blank.tobytes()
