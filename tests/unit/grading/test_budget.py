"""The grading budget: whatever the agent leaves behind, grading returns grades (reward 0 for what
ran out), never a crash, a hang or a judge error the agent provoked."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import docx
import pytest
from grading_testkit import verifier, write_files

from kwrl.grading.budget import GraderBudget, OverBudget, enforced
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.files import MAX_TREE_PART_BYTES
from kwrl.grading.grade import prepare
from kwrl.grading.recalc import soffice
from kwrl.grading.render import render_file
from kwrl.grading.verify import grade_within_budget
from kwrl.tasks.models import Verifier

FILES = verifier("v1", "answer.txt holds 42", check={"kind": "regex", "pattern": "42", "source": "files"})  # fmt: skip
ANSWER = verifier("v2", "says 42", check={"kind": "number", "value": 42, "source": "answer"}, index=1)  # fmt: skip


def _grade(
    world: Path, final: Path, budget: GraderBudget, verifiers: list[Verifier] | None = None
) -> tuple[dict[str, float], list[str], str | None]:
    grades, _ = grade_within_budget(
        verifiers=verifiers or [FILES, ANSWER], task="t", answer="The answer is 42.",
        initial=StateView.of([world]), final=StateView.of([final]), judge_config=None,
        budget=budget,
    )  # fmt: skip
    return grades.reward_json(), [g.rationale for g in grades.grades], grades.grades_json().get("error")  # fmt: skip


@pytest.fixture
def world(tmp_path: Path) -> Path:
    return write_files(tmp_path / "world", {"filesystem/readme.txt": "hello\n"})


def _final(tmp_path: Path, world: Path) -> Path:
    final = tmp_path / "final"
    write_files(final, {"filesystem/readme.txt": "hello\n", "filesystem/answer.txt": "42\n"})
    return final


def test_a_world_within_budget_grades_as_without_one(tmp_path: Path, world: Path) -> None:
    final = _final(tmp_path, world)
    rewards, _, error = _grade(world, final, GraderBudget())
    assert rewards["reward"] == 1.0 and error is None


@pytest.mark.parametrize(
    ("attack", "limit", "why"),
    [
        ("files", {"max_files": 50}, "over 50 files and directories"),
        ("dirs", {"max_files": 50}, "over 50 files and directories"),
        ("deep", {"max_depth": 10}, "deeper than 10 levels"),
        ("long", {"max_path_bytes": 500}, "longer than 500 bytes"),
        ("text", {"max_evidence_chars": 1000}, "characters rendered"),
        ("mail", {"max_records": 100}, "records (new mail)"),
        ("chat", {"max_records": 100}, "records (chat objects)"),
        ("calendar", {"max_records": 100}, "records (calendar events)"),
    ],
)
def test_outputs_over_budget_fail_every_criterion_with_the_reason(
    tmp_path: Path, world: Path, attack: str, limit: dict[str, int], why: str
) -> None:
    final = _final(tmp_path, world)
    fs = final / "filesystem"
    if attack == "files":
        for i in range(60):
            (fs / f"f{i}.txt").write_text("42")
    elif attack == "dirs":
        for i in range(60):
            (fs / f"d{i}").mkdir()
    elif attack in ("deep", "long"):
        d = fs
        for _ in range(12 if attack == "deep" else 4):
            d = d / ("d" * (1 if attack == "deep" else 200))
        d.mkdir(parents=True)
        (d / "x.txt").write_text("42")
    elif attack == "text":
        for i in range(3):
            (fs / f"t{i}.txt").write_text("x" * 600)
    elif attack == "mail":
        mails = (
            f"From a@b Mon Jan  1 00:00:00 2024\nMessage-ID: <{i}@x>\n\n41\n\n" for i in range(101)
        )
        write_files(final, {".apps_data/mail/inbox.mbox": "".join(mails)})
    elif attack == "chat":
        write_files(
            final, {".apps_data/chat/c.json": "[" + ",".join(['{"text": "41"}'] * 101) + "]"}
        )
    else:
        events = "".join(f"BEGIN:VEVENT\nUID:{i}\nSUMMARY:41\nEND:VEVENT\n" for i in range(101))
        write_files(
            final, {".apps_data/calendar/c.ics": f"BEGIN:VCALENDAR\n{events}END:VCALENDAR\n"}
        )
    rewards, rationales, error = _grade(world, final, GraderBudget(**limit))
    assert rewards == {"reward": 0.0}
    assert all(r.startswith("evidence over budget: ") and why in r for r in rationales), rationales
    assert error is not None and why in error


def test_the_deadline_fails_every_criterion(tmp_path: Path, world: Path) -> None:
    final = _final(tmp_path, world)
    for i in range(3000):
        (final / "filesystem" / f"f{i}.txt").write_text("42")
    rewards, rationales, _ = _grade(world, final, GraderBudget(deadline_s=0.001))
    assert rewards["reward"] == 0.0
    assert "deadline of 0.001 s passed" in rationales[0]


def test_the_alarm_passes_through_except_exception_and_is_disarmed_after() -> None:
    with pytest.raises(OverBudget), enforced(GraderBudget(deadline_s=0.01)):
        while True:
            try:
                sum(range(10_000))
            except Exception:  # as the renderers do: it must not swallow the alarm
                continue
    sum(range(1_000_000))  # no alarm left armed


def test_unreadable_names_and_broken_stores_are_graded_not_crashed(
    tmp_path: Path, world: Path
) -> None:
    final = _final(tmp_path, world)
    with open(os.path.join(os.fsencode(final / "filesystem"), b"bad\xff.txt"), "w") as f:
        f.write("41")
    (final / "filesystem" / "new\nline.txt").write_text("41")
    write_files(final, {
        ".apps_data/chat/deep.json": "[" * 5000 + "]" * 5000,
        ".apps_data/calendar/broken.ics": "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:garbage\n",
        ".apps_data/mail/inbox.mbox": "From x\nMessage-ID: <1@x>\nContent-Type: text/plain; charset=nope\n\nhi\n",
    })  # fmt: skip
    grades, ev = grade_within_budget(
        verifiers=[FILES, ANSWER], task="t", answer="The answer is 42.",
        initial=StateView.of([world]), final=StateView.of([final]), judge_config=None,
        budget=GraderBudget(),
    )  # fmt: skip
    assert grades.error is None and grades.score == 1.0
    assert ev is not None and [m.body for m in ev.mail] == ["hi"] and ev.chat == []
    import json

    text = json.dumps(grades.grades_json(), ensure_ascii=False)
    text.encode("utf-8")  # writable: the undecodable name became '?'
    assert "bad?.txt" in text


def test_a_criterion_with_too_many_artifacts_for_the_judge_fails_alone(
    tmp_path: Path, world: Path
) -> None:
    final = _final(tmp_path, world)
    (final / "filesystem" / "memo.txt").write_text("memo")
    judged = verifier("v3", "a memo was written", index=2)
    ev = Evidence.collect(task="t", answer="42", initial=StateView.of([world]), final=StateView.of([final]))  # fmt: skip
    prepared = prepare([FILES, ANSWER, judged], ev, max_judge_artifacts=1)
    assert prepared.requests == []
    g = prepared.grades["v3"]
    assert g.score == 0 and g.method == "auto_fail" and "2 artifacts" in g.rationale
    assert prepared.grades["v1"].score == 1.0
    assert len(prepare([judged], ev, max_judge_artifacts=2).requests) == 1


def test_a_docx_part_too_large_to_parse_is_refused_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.docx"
    d = docx.Document()
    d.add_paragraph("x")
    d.save(str(path))
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    para = b"<w:p><w:r><w:t>lorem</w:t></w:r></w:p>"
    body = para * (MAX_TREE_PART_BYTES // len(para) + 1)
    parts["word/document.xml"] = parts["word/document.xml"].replace(b"<w:body>", b"<w:body>" + body, 1)  # fmt: skip
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in parts.items():
            z.writestr(n, data)
    text = render_file(path)
    assert text.startswith("[refused docx file:") and "word/document.xml declares" in text


def test_budget_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWRL_GRADER_DEADLINE_S", "12.5")
    monkeypatch.setenv("KWRL_GRADER_MAX_FILES", "7")
    b = GraderBudget.from_env()
    assert (b.deadline_s, b.max_files) == (12.5, 7)
    monkeypatch.setenv("KWRL_GRADER_MAX_FILES", "-1")
    from kwrl.errors import ConfigError

    with pytest.raises(ConfigError, match="max_files"):
        GraderBudget.from_env()


def test_the_judges_prompt_does_not_grow_with_the_agents_artifacts() -> None:
    from kwrl.grading.evidence import Artifact
    from kwrl.grading.judges import build_prompt

    arts = [Artifact(i, "file", "created", "/" + "d/" * 1400 + f"{i}.txt", "x" * 5000, ".txt")
            for i in range(1, 201)]  # fmt: skip
    _, user = build_prompt(task="t", answer="a", criterion="c", scope="files", artifacts=arts,
                           max_artifact_chars=100_000)  # fmt: skip
    _, empty = build_prompt(task="t", answer="a", criterion="c", scope="files", artifacts=[],
                            max_artifact_chars=100_000)  # fmt: skip
    assert len(user) - len(empty) < 100_000 + 200 * 40, len(user)


@pytest.mark.skipif(soffice() is None, reason="needs LibreOffice")
def test_the_deadline_stops_a_formula_recalculation(tmp_path: Path, world: Path) -> None:
    """LibreOffice computing an agent's workbooks is cut at the deadline, its process group killed."""
    import time

    import openpyxl

    from kwrl.grading.render import clear_cache

    clear_cache()
    final = _final(tmp_path, world)
    for i in range(3):
        wb = openpyxl.Workbook()
        wb.active["A1"] = f"=SUM(B1:B9)+{i}"  # no cached value: the grader asks LibreOffice
        wb.save(final / "filesystem" / f"f{i}.xlsx")
    t0 = time.monotonic()
    rewards, rationales, _ = _grade(world, final, GraderBudget(deadline_s=1.0))
    assert rewards["reward"] == 0.0 and "deadline of 1 s passed" in rationales[0]
    assert time.monotonic() - t0 < 10


def test_the_watchdog_ends_a_grading_the_alarm_cannot_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Off the main thread (as for C code that holds it) no alarm fires: the watchdog calls on_hang."""
    import threading

    from kwrl.grading import budget

    monkeypatch.setattr(budget, "WATCHDOG_GRACE_S", 0.0)
    hung = threading.Event()
    reasons: list[str] = []

    def on_hang(reason: str) -> None:
        reasons.append(reason)
        hung.set()

    def stuck() -> None:
        with enforced(GraderBudget(deadline_s=0.05), on_hang=on_hang):
            hung.wait(timeout=30)

    t = threading.Thread(target=stuck)
    t.start()
    t.join(timeout=60)
    assert reasons and "deadline of 0.05 s passed" in reasons[0] and "watchdog" in reasons[0]


def test_the_worlds_own_files_do_not_count_against_the_file_cap(tmp_path: Path) -> None:
    files = {f"filesystem/w/{i}.txt": "seed" for i in range(60)}
    world = write_files(tmp_path / "world", files)
    final = write_files(tmp_path / "final", {**files, "filesystem/answer.txt": "42\n"})
    rewards, _, error = _grade(world, final, GraderBudget(max_files=10))
    assert rewards["reward"] == 1.0 and error is None
    write_files(final, {f"filesystem/x{i}.txt": "41" for i in range(12)})
    rewards, rationales, _ = _grade(world, final, GraderBudget(max_files=10))
    assert rewards["reward"] == 0.0 and "over 10 files and directories" in rationales[0]
