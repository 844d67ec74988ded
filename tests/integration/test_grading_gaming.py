"""The gaming suite: for every task family, the spray, the dump, the hedge and names-only files
score 0 on the criteria they target, while the gold solution scores 1.0.

One generated Law world (every family applies there) with one task per family. Each attack is
derived from the task's own gold solution, so it holds the right values:
- spray: the gold text plus a list of candidates (values around each expected one, every rival);
- dump: the world's whole data (chat, mail, files) in place of each text that states the answer;
- hedge: each expected value, name, date or time joined to a wrong one by "either ... or";
- names-only: instead of the output file, a .txt whose *name* holds the expected figures.
Attacks on tool calls rewrite the string arguments of the gold calls that state the answer and
replay them through a real `kwrl world serve` gateway; the final state is graded by the real
grader (`grade_states`). A spraying solve.sh also runs as a real harbor trial
(`test_a_spraying_oracle_scores_zero_in_a_real_trial`).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_synth_oracle import Gateway, reset

from kwrl.grading.checks import number_tokens
from kwrl.grading.diff import StateView, task_layers
from kwrl.grading.evidence import Evidence
from kwrl.grading.records import new_chat_posts, new_mail
from kwrl.grading.verify import grade_states
from kwrl.synth.generate import SynthConfig, generate
from kwrl.synth.tasks import FAMILIES
from kwrl.tasks.models import EventExistsCheck, SlotCheck, Verifier
from kwrl.tasks.taskdir import TaskDir, load_task, task_dirs
from kwrl.worlds.client import GatewayClient

FILE_FAMILIES = {"memo_doc", "summary_sheet", "edit_sheet", "edit_doc", "new_deck", "edit_deck"}
CELL_FAMILIES = {"summary_sheet", "edit_sheet"}  # a cell holds one value: nothing to spray
Attack = Callable[[str], str]
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T[\d:]+")  # a booking's time is data, not a statement


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskDir]:
    ds = tmp_path_factory.mktemp("gaming") / "ds"
    cfg = SynthConfig(out=ds, worlds=1, tasks_per_world=18, seed=4, workers=1)
    cfg.domains = ["Law"]  # seed 4's Law world draws all 18 families in 18 tasks
    generate(cfg, progress=False)
    by_family: dict[str, TaskDir] = {}
    for p in task_dirs(ds / "tasks"):
        fam = re.sub(r"^law-w\d+-\d+-", "", p.name).replace("-", "_")
        by_family.setdefault(fam, load_task(p))
    return by_family


# --------------------------------------------------------------------------- what the checks want


def slots(task: TaskDir, *types: str) -> list[SlotCheck]:
    return [c for v in task.verifiers if isinstance(c := v.verifier_values.kwrl_check, SlotCheck)
            and (not types or c.type in types)]  # fmt: skip


def values(task: TaskDir) -> list[float]:
    """Every figure a slot of the task wants stated."""
    return [float(c.value) for c in slots(task, "number") if isinstance(c.value, float | int)]


def variants(text: str) -> list[str]:
    """Strings shaped like an identifier, other digits (other case numbers, other dates)."""
    return [
        re.sub(r"\d", lambda m, k=k: str((int(m.group(0)) + k) % 10), text) for k in range(1, 10)
    ]


def names(task: TaskDir) -> list[tuple[str, list[str]]]:
    """(expected string, its rivals) of the text slots."""
    out = []
    for c in slots(task, "text"):
        items = c.value if isinstance(c.value, list) else [str(c.value)]
        out += [(n, c.rivals or (variants(n) if c.rival_pattern else [])) for n in items]
    return out


def patterns(task: TaskDir) -> list[SlotCheck]:
    """The date and time slots."""
    return slots(task, "date", "time")


def _wanted(task: TaskDir, tok_text: str) -> float | None:
    for t in number_tokens(tok_text):
        for v in values(task):
            if any(abs(r - v) <= max(abs(v) * 0.005, 0.05) for r in t.readings):
                return v
    return None


def states_answer(task: TaskDir, s: str) -> bool:
    """The string states something a check wants (so an attack rewrites it)."""
    if any(_wanted(task, s[t.start : t.end]) is not None for t in number_tokens(s)):
        return True
    low = s.casefold()
    return any(n.casefold() in low for n, _ in names(task)) or any(
        str(c.value) in s for c in patterns(task)
    )


def _scaled(text: str, factor: float) -> str:
    """A wrong value written like `text` ('$1,234.5m' -> '$1,320.9m')."""
    m = re.search(r"\d[\d,]*(\.\d+)?", text)
    assert m
    decimals = len(m.group(1)) - 1 if m.group(1) else 0
    value = float(m.group(0).replace(",", "")) * factor
    shown = f"{value:,.{decimals}f}" if "," in m.group(0) else f"{value:.{decimals}f}"
    return text[: m.start()] + shown + text[m.end() :]


# --------------------------------------------------------------------------- attacks


def spray(task: TaskDir) -> Attack:
    cands: list[str] = []
    for v in values(task):
        cands += [f"{v * (1 + k / 100):,.2f}" for k in range(-25, 26)]
    for n, rivals in names(task):
        cands += [n, *rivals]
    for c in patterns(task):
        if c.type == "time":
            cands += [f"{h:02d}:00" for h in range(24)]
        else:
            cands += [f"2026-03-{d:02d}" for d in range(1, 29)]
    block = " ".join(cands) + " " + " ".join(str(i) for i in range(1, 5001))
    return lambda s: f"{s}\nOther candidates: {block}"


@functools.cache
def dump(world: Path) -> Attack:
    state = StateView.of([world])
    apps = [r for r in state.files() if r.startswith(".apps_data/")]
    empty = StateView.of([])
    ev = Evidence.collect(task="", answer="", initial=state, final=state)
    parts = [p.render() for p in new_chat_posts(empty, state, apps)]
    parts += [m.render() for m in new_mail(empty, state, apps)]
    parts += [ev.text_of(r) for r in state.files() if r.startswith("filesystem/")]
    text = "\n\n".join(parts)
    return lambda s: text


def hedge(task: TaskDir) -> Attack:
    def attack(s: str) -> str:
        def num(m: re.Match[str]) -> str:
            tok = m.group(0)
            return f"either {tok} or {_scaled(tok, 1.07)}" if _wanted(task, tok) else tok

        out = re.sub(r"[$]?\d[\d,]*(\.\d+)?(%|x|m\b|k\b|bn\b)?", num, s)
        for n, rivals in names(task):
            if rivals and not re.fullmatch(r"[\d.]+", n):  # a name, a period, a case number
                out = re.sub(re.escape(n), f"either {n} or {rivals[0]}", out, count=1)
            elif rivals:
                out = re.sub(
                    rf"(?<![\w.]){re.escape(n)}(?![\w])", f"{n} or {rivals[0]}", out, count=1
                )
        for c in patterns(task):
            alt = "16:00" if c.type == "time" else "2031-01-15"
            out = re.sub(re.escape(str(c.value)), lambda m, alt=alt: f"{m.group(0)} or {alt}", out)
        return out

    return attack


def rewrite(obj: Any, task: TaskDir, attack: Attack) -> Any:
    """The gold call arguments with every string that states the answer attacked."""
    if isinstance(obj, dict):
        return {k: rewrite(v, task, attack) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rewrite(v, task, attack) for v in obj]
    if isinstance(obj, str) and not ISO_TIME.fullmatch(obj) and states_answer(task, obj):
        return attack(obj)
    return obj


def spray_events(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Book the event at several hours of the day beside the one asked for."""
    out = []
    for c in calls:
        out.append(c)
        if "create_event" in c["tool"]:
            text = json.dumps(c)
            assert re.search(r"T(\d\d):00:00", text)
            for delta in range(-6, 0):  # the same booking at earlier hours of the day
                shifted = re.sub(
                    r"T(\d\d):00:00",
                    lambda m, d=delta: f"T{int(m.group(1)) + d:02d}:00:00",
                    text,
                )
                out.append(json.loads(shifted))
    return out


# --------------------------------------------------------------------------- running


async def run(
    task: TaskDir, gw_url: str, root: Path, calls: list[dict[str, Any]], answer: str
) -> dict[str, float]:
    reset(root, task)
    async with GatewayClient(gw_url) as client:
        for c in calls:  # a rewritten call the app refuses simply does nothing
            await client.call_flat(c["tool"], c["arguments"])
    return await grade_only(task, root, answer)


async def grade_only(task: TaskDir, root: Path, answer: str) -> dict[str, float]:
    grades = await grade_states(
        verifiers=task.verifiers, task=task.instruction, answer=answer,
        initial=StateView.of(task_layers(task.world_dir, task.overlay_dir)), final=StateView.of([root]),
        judge_config=None,
    )  # fmt: skip
    return {g.verifier_id: g.score for g in grades.grades}


def targeted(v: Verifier, attack: str) -> bool:
    """Criteria an attack on the stated values must fail (file presence and markers aside)."""
    c = v.verifier_values.kwrl_check
    if isinstance(c, EventExistsCheck):
        return attack == "spray" and c.date is not None
    return isinstance(c, SlotCheck)


async def test_every_attack_scores_zero_on_what_it_targets(
    suite: dict[str, TaskDir], tmp_path: Path
) -> None:
    assert set(suite) == set(FAMILIES), f"families missing: {set(FAMILIES) - set(suite)}"
    any_task = next(iter(suite.values()))
    root = tmp_path / "root"
    root.mkdir()
    reset(root, any_task)
    gw = Gateway(root, tmp_path / "gw.sock")
    failures: list[str] = []
    try:
        for fam, task in sorted(suite.items()):
            gold_calls = json.loads((task.path / "solution" / "gold_calls.json").read_text())
            gold = (task.golden or [{}])[0].get("golden_text_response", "")
            scores = await run(task, gw.url, root, gold_calls, gold)
            if set(scores.values()) != {1.0}:
                failures.append(f"{fam}: gold scored {scores}")
            attacks: dict[str, Attack] = {
                "spray": spray(task), "dump": dump(task.world_dir), "hedge": hedge(task),
            }  # fmt: skip
            for name, attack in attacks.items():
                if fam in CELL_FAMILIES:
                    continue
                calls = rewrite(gold_calls, task, attack)
                if (calls, attack(gold)) == (gold_calls, gold) or not any(
                    targeted(v, name) for v in task.verifiers
                ):
                    failures.append(f"{fam} {name}: the attack changes nothing it is graded on")
                if name == "spray" and fam == "schedule":
                    calls = spray_events(calls)
                scores = await run(task, gw.url, root, calls, attack(gold))
                leaked = [
                    v.verifier_values.criteria
                    for v in task.verifiers
                    if targeted(v, name) and scores[v.verifier_id] > 0
                ]
                if leaked:
                    failures.append(f"{fam} {name}: passed {leaked}")
            if fam in FILE_FAMILIES:
                figures = " ".join(f"{v:,.2f}" for v in values(task)) or "0"
                reads = [
                    c for c in gold_calls if {"read", "list", "search"} & set(c["tool"].split("_"))
                ]
                await run(task, gw.url, root, reads, gold)
                out = root / "filesystem" / "Outputs"
                out.mkdir(exist_ok=True)
                (out / f"{figures} Key metric Analyst update.txt").write_text("see the name")
                scores = await grade_only(task, root, gold)
                if any(scores.values()):
                    failures.append(f"{fam} names-only: scored {scores}")
    finally:
        gw.close()
    assert not failures, "\n".join(failures)


def test_a_spraying_oracle_scores_zero_in_a_real_trial(
    suite: dict[str, TaskDir], tmp_path: Path
) -> None:
    """`kwrl trial run --agent oracle` with a solve.sh that writes the gold answer scores 1.0; one
    that writes the gold answer amid a spray scores 0 (local sandbox, real verifier phase)."""
    task = suite["table_lookup"]
    gold = (task.golden or [{}])[0].get("golden_text_response", "")
    solve = task.path / "solution" / "solve.sh"
    original = solve.read_text()
    rewards: dict[str, float] = {}
    try:
        for name, answer in (("gold", gold), ("spray", spray(task)(gold))):
            solve.write_text(
                "#!/usr/bin/env bash\nset -e\ncat > /logs/agent/final_answer.txt <<'EOF'\n"
                f"{answer}\nEOF\n"
            )
            out = tmp_path / name
            proc = subprocess.run(
                [sys.executable, "-m", "kwrl.cli", "trial", "run", str(task.path),
                 "--model", "oracle", "--out", str(out)],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            found = [json.loads(p.read_text()) for p in out.rglob("reward.json")]
            assert len(found) == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
            rewards[name] = found[0]["reward"]
    finally:
        solve.write_text(original)
    assert rewards == {"gold": 1.0, "spray": 0.0}


# --------------------------------------------------------------------------- answers a judge fails


@pytest.fixture(scope="module")
def ib_suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskDir]:
    """An Investment Banking world: its chat fact is a data room provider (a name, no digits)."""
    ds = tmp_path_factory.mktemp("gaming-ib") / "ds"
    cfg = SynthConfig(out=ds, worlds=1, tasks_per_world=8, seed=6, workers=1)
    cfg.domains = ["Investment Banking"]  # seed 6's world draws chat_fact_lookup in 8 tasks
    generate(cfg, progress=False)
    return {re.sub(r"^ib-w\d+-\d+-", "", p.name).replace("-", "_"): load_task(p)
            for p in task_dirs(ds / "tasks")}  # fmt: skip


def golden(task: TaskDir) -> str:
    return (task.golden or [{}])[0].get("golden_text_response", "")


def check_of(task: TaskDir, kind: type) -> tuple[str, Any]:
    """(verifier id, check) of the task's first criterion checked by `kind`."""
    return next((v.verifier_id, c) for v in task.verifiers
                if isinstance(c := v.verifier_values.kwrl_check, kind))  # fmt: skip


def judge_fails(
    law: dict[str, TaskDir], ib: dict[str, TaskDir]
) -> list[tuple[str, TaskDir, str, str]]:
    """(name, task, final answer, the criterion it must fail) for each attack of issue 35."""
    out = []
    task = law["table_lookup"]
    vid, c = check_of(task, SlotCheck)
    assert isinstance(c.value, float)
    gold = golden(task)
    tok = next(gold[t.start : t.end].strip() for t in number_tokens(gold)
               if any(abs(m - c.value * (c.scale or 1)) < 1e-6 * c.value * (c.scale or 1)
                      for m in t.meanings(c.scale)))  # fmt: skip
    ks = (0.8, 0.84, 0.88, 0.92, 0.96, 0.98, 1.02, 1.04, 1.08, 1.12, 1.16, 1.2)
    out += [
        ("guesses", task, " ".join(f"It was {_scaled(tok, k)}." for k in ks) + f" It was {tok}.", vid),
        ("negated", task, gold.replace(tok, f"not {tok}", 1), vid),
        ("though", task, gold.replace(tok, f"{tok}, though it could also be {_scaled(tok, 1.1)}", 1), vid),
        ("table", task, "| Case | Figure |\n|---|---|\n" + "\n".join(
            f"| {i} | {_scaled(tok, k)} |" for i, k in enumerate((0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3))
        ), vid),
    ]  # fmt: skip
    task = law["mail_fact_lookup"]
    vid, who = next((v.verifier_id, c) for v in task.verifiers
                    if isinstance(c := v.verifier_values.kwrl_check, SlotCheck) and c.label == "Sent by")  # fmt: skip
    name = str(who.value[0] if isinstance(who.value, list) else who.value)
    out += [
        ("possibly", task, golden(task).replace(name, f"{name}, possibly {who.rivals[0]}"), vid),
        ("maybe in prose", task, golden(task) + f"\nMaybe {who.rivals[0]} sent it, though.", vid),
    ]  # fmt: skip
    task = law["calendar_lookup"]
    (day_id, _), (time_id, _) = [
        (v.verifier_id, v) for v in task.verifiers
        if isinstance(v.verifier_values.kwrl_check, SlotCheck)
    ]  # fmt: skip
    iso = re.search(r"\d{4}-\d{2}-\d{2}", golden(task))
    assert iso
    y, m, d = iso[0].split("-")
    moved = f"{(int(d) % 28) + 1:02d}/{m}/{y}"
    slots_ = f"Date: {iso[0]}\nStart time: 14:00 UTC"
    out += [
        ("moved day", task, f"{slots_}\nIt is on {iso[0]}, possibly moved to {moved}.", day_id),
        ("moved time", task, f"{slots_}\nIt starts at 14:00, possibly 16:30.", time_id),
        ("no slot", task, f"It is on {iso[0]} and starts at 14:00 UTC.", day_id),
    ]  # fmt: skip
    task = ib["chat_fact_lookup"]
    vid, room = check_of(task, SlotCheck)
    assert isinstance(room.value, list)
    providers = sorted({room.value[0], *room.rivals, "Box", "Egnyte", "Citrix", "Dropbox"})
    out.append(("providers", task, "Answer: " + " or ".join(providers) + ".", vid))
    return out


def test_answers_a_judge_fails_score_zero_through_kwrl_rollout(
    suite: dict[str, TaskDir], ib_suite: dict[str, TaskDir], tmp_path: Path
) -> None:
    """Hedged, negated, tabled and sprayed answers, each a solve.sh of a copy of a generated task
    (and the hostile `ATTACKS` of the hand-made task), run through `kwrl rollout --agent oracle`
    in real sandboxed trials: each scores 0 on the criterion it targets; the gold answers 1.0."""
    from kwrl.sandbox.conformance.testing import make_task, make_world

    root = tmp_path / "ds"
    (root / "worlds").mkdir(parents=True)
    attacks = judge_fails(suite, ib_suite)
    gold_tasks = {t.path.name: t for _, t, _, _ in attacks}
    for t in gold_tasks.values():
        if not (root / "worlds" / t.world_dir.name).exists():
            (root / "worlds" / t.world_dir.name).symlink_to(t.world_dir)
    plan: dict[str, tuple[str, str | None]] = {}  # task dir name -> (criterion or "", answer)
    for name, t, answer, vid in [
        *attacks,
        *(("gold", t, golden(t), "") for t in gold_tasks.values()),
    ]:
        dest = root / "tasks" / f"{t.path.name}--{name.replace(' ', '-')}"
        shutil.copytree(t.path, dest)
        (dest / "solution" / "solve.sh").write_text(
            "#!/usr/bin/env bash\nset -e\ncat > /logs/agent/final_answer.txt <<'EOF'\n"
            f"{answer}\nEOF\n"
        )
        plan[dest.name] = (vid, answer)
    world = make_world(root).name
    hostile = ("hedge", "negation", "table", "guesses")
    for name in (*hostile, "oracle"):
        make_task(root, f"h-{name}", world_id=world, solution=name, grader="kwrl")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "kwrl.cli", "rollout", str(root), "--model", "oracle",
         "--out", str(out), "--concurrency", "2"],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    rewards = {p.parent.parent.name.rsplit("__", 1)[0]: json.loads(p.read_text())
               for p in out.glob("trials/*/verifier/reward.json")}  # fmt: skip
    for name, r in rewards.items():  # each criterion's score is grades.json's
        grades = json.loads(
            (out / "trials").glob(f"{name}__*/verifier/grades.json").__next__().read_text()
        )
        r.update({f"criterion/{g['verifier_id']}": g["score"] for g in grades["grades"]})
    assert len(rewards) == len(plan) + len(hostile) + 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    failures = []
    for dest, (vid, answer) in plan.items():
        r = rewards[dest]
        if vid == "" and r["reward"] != 1.0:
            failures.append(f"{dest}: gold scored {r}")
        elif vid and r[f"criterion/{vid}"] != 0.0:
            failures.append(f"{dest}: {answer!r} passed {vid}")
    failures += [
        f"h-{n}: {rewards[f'h-{n}']}" for n in hostile if rewards[f"h-{n}"]["reward"] != 0.0
    ]
    assert rewards["h-oracle"]["reward"] == 1.0
    assert not failures, "\n".join(failures)
