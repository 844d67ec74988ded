"""Every family's answer criteria read a final answer's slots as a judge does (docs/contracts.md,
"The answer contract of generated tasks"): the gold answer in other words (another scale or unit,
rounding within the tolerance, other date and time spellings, the task restated beside it,
bullets) passes; the same answer hedged, negated, sprayed over guesses or laid out as a table of
candidates fails; an empty answer fails.

One planned world per domain, one draft of each family (the grader's `prepare`, machine checks
only, over an Evidence that holds the draft's prompt and the answer); the memo and the deck a
family writes are real .docx/.pptx files holding the gold text in other words."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import docx
import pptx
import pytest
from pptx.util import Emu

from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import prepare
from kwrl.grading.statements import number_tokens
from kwrl.synth.families.base import TaskDraft
from kwrl.synth.render import plan_files
from kwrl.synth.rng import Rng
from kwrl.synth.tasks import FAMILIES, Task
from kwrl.synth.world import World, plan_world
from kwrl.tasks.models import DOMAINS, SlotCheck, Verifier, VerifierValues

ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
HOUR = re.compile(r"\b(\d{2}):00\b")


def drafts() -> Iterator[tuple[str, World, TaskDraft]]:
    for i, domain in enumerate(DOMAINS):
        w = plan_world(3, i, domain)
        plan_files(w)
        for fam, make in FAMILIES.items():
            for p in w.projects:
                if (d := make(w, p, Rng("paraphrase", fam))) is not None:
                    yield f"{domain[:3]}-{fam}", w, d
                    break


DRAFTS = list(drafts())


def answer_checked(d: TaskDraft) -> list[Verifier]:
    """The draft's criteria that read only the final answer."""
    out = []
    for i, c in enumerate(d.criteria):
        if isinstance(c.check, SlotCheck) and c.check.place == "answer":
            vals = VerifierValues(criteria=c.text, kwrl_check=c.check)
            out.append(Verifier(verifier_id=f"c{i}", verifier_values=vals, verifier_index=i))
    return out


def scores(d: TaskDraft, answer: str) -> dict[str, float]:
    """Scores of every criterion of the draft's rubric that reads the answer (the others' figures
    still count as the task's own)."""
    everything = [
        Verifier(verifier_id=f"c{i}", verifier_index=i,
                 verifier_values=VerifierValues(criteria=c.text, kwrl_check=c.check))
        for i, c in enumerate(d.criteria)
    ]  # fmt: skip
    ev = Evidence.collect(
        task=d.prompt, answer=answer, initial=StateView.of([]), final=StateView.of([])
    )
    grades = prepare(everything, ev).grades
    return {v.verifier_id: grades[v.verifier_id].score for v in answer_checked(d)}


def numbers(d: TaskDraft) -> list[SlotCheck]:
    return [c for v in answer_checked(d)
            if isinstance(c := v.verifier_values.kwrl_check, SlotCheck) and c.type == "number"]  # fmt: skip


def close(x: float, c: SlotCheck) -> bool:
    assert isinstance(c.value, float)
    unit = c.scale or 1.0
    return abs(x - c.value * unit) <= max(c.rel_tol * abs(c.value * unit), c.abs_tol * unit)


def rewrite_numbers(d: TaskDraft, text: str, render: Callable[[SlotCheck, str], str]) -> str:
    """`text` with each number a number check wants rewritten by `render(check, token_text)`."""
    out, last = [], 0
    for t in number_tokens(text):
        start = t.start + len(text[t.start : t.end]) - len(text[t.start : t.end].lstrip())
        tok = text[start : t.end]
        c = next((c for c in numbers(d) if any(close(m, c) for m in t.meanings(c.scale))), None)
        if c is not None:
            out += [text[last:start], render(c, tok)]
            last = t.end
    return "".join(out) + text[last:]


def in_words(c: SlotCheck, tok: str) -> str:
    """The value in words of its scale: 'USD 283.0 million', '12.34 percent'."""
    v = c.value
    assert isinstance(v, float)
    return {1e6: f"USD {v:,.1f} million", 1e9: f"USD {v:,.2f} billion",
            1e3: f"USD {v:,.1f} thousand", 0.01: f"{v:.2f} percent"}.get(c.scale or 1.0, tok)  # fmt: skip


def plain(c: SlotCheck, tok: str) -> str:
    """The value at full scale: '$283,000,000', '1,234 bps'."""
    assert isinstance(c.value, float)
    if c.scale == 0.01:
        return f"{c.value * 100:,.0f} bps"
    return f"${c.value * c.scale:,.0f}" if c.scale else tok


def rounded(c: SlotCheck, tok: str) -> str:
    """Four significant digits (well within 0.5%), never coarser than the decimals the slot's form
    asks (`1,230.8` stays: `1,231` for a figure in $m to one decimal changes it), the token's sign
    and unit kept."""
    m = re.search(r"\d[\d,]*(\.\d+)?", tok)
    assert m
    x = float(m.group(0).replace(",", ""))
    four = f"{x:,.4g}"
    if c.decimals is not None and len(four.partition(".")[2]) < c.decimals:
        four = f"{x:,.{c.decimals}f}"
    return tok[: m.start()] + four + tok[m.end() :]


def other_spellings(text: str) -> str:
    """Dates as '11 April 2026' and 11/04/2026, hours as '2 pm'."""

    def day(m: re.Match[str]) -> str:
        d = date(int(m[1]), int(m[2]), int(m[3]))
        return f"{d.day} {d:%B %Y} ({d.day:02d}/{d.month:02d}/{d.year})"

    def hour(m: re.Match[str]) -> str:
        h = int(m[1])
        return f"{h % 12 or 12} {'pm' if h >= 12 else 'am'}"

    return HOUR.sub(hour, ISO.sub(day, text))


PARAPHRASES: dict[str, Callable[[TaskDraft, str], str]] = {
    "gold": lambda d, a: a,
    "in words": lambda d, a: rewrite_numbers(d, a, in_words),
    "full scale": lambda d, a: rewrite_numbers(d, a, plain),
    "rounded": lambda d, a: "About " + rewrite_numbers(d, a, rounded),
    "spellings": lambda d, a: other_spellings(a),
    "task restated": lambda d, a: f"You asked: {d.prompt}\n\nHere is what I found. {a}",
    "bullets": lambda d, a: "Summary:\n- " + a.replace(". ", ".\n- "),
}


@pytest.mark.parametrize("name,w,d", DRAFTS, ids=[n for n, _, _ in DRAFTS])
def test_the_gold_answer_in_other_words_passes_and_nothing_fails(
    name: str, w: World, d: TaskDraft
) -> None:
    if not answer_checked(d):
        pytest.skip("no criterion reads the final answer")
    for label, para in PARAPHRASES.items():
        text = para(d, d.answer)
        got = scores(d, text)
        assert set(got.values()) == {1.0}, f"{label}: {text!r} scored {got}"
    assert set(scores(d, "").values()) == {0.0}


# --------------------------------------------------------------------------- what a judge fails


def wrong(c: SlotCheck, tok: str, k: float) -> str:
    m = re.search(r"\d[\d,]*(\.\d+)?", tok)
    assert m
    x = float(m.group(0).replace(",", "")) * k
    return tok[: m.start()] + f"{x:,.2f}" + tok[m.end() :]


def attacks(d: TaskDraft, w: World) -> dict[str, str]:
    """Each attack of issue 35 on the gold answer, where the draft's rubric offers its target."""
    a = d.answer
    out: dict[str, str] = {}
    if numbers(d):
        out["hedged"] = rewrite_numbers(
            d, a, lambda c, t: f"{t}, though it could also be {wrong(c, t, 1.1)}"
        )
        out["negated"] = rewrite_numbers(d, a, lambda c, t: f"not {t}")
        out["guesses"] = (
            a
            + " "
            + " ".join(
                rewrite_numbers(d, a, lambda c, t, k=k: wrong(c, t, k))
                for k in (0.8, 0.85, 0.9, 0.95, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4)
            )
        )  # thirteen answers in separate sentences
        out["table"] = "| Candidate | Value |\n|---|---|\n" + "\n".join(
            f"| {i} | {rewrite_numbers(d, a, lambda c, t, k=k: wrong(c, t, k))} |"
            for i, k in enumerate((0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3))
        )
    people = [x.last for x in w.people]
    asked = " ".join(str(c.value) for v in answer_checked(d)
                     if isinstance(c := v.verifier_values.kwrl_check, SlotCheck) and c.type == "text")  # fmt: skip
    if name := next((x for x in people if re.search(rf"\b{x}\b", asked)), None):
        other = next(x for x in people if x != name and x not in a)
        out["possibly someone else"] = re.sub(
            rf"\b{name}\b", f"{name}, possibly {other}", a, count=1
        )
    if m := ISO.search(a):
        out["possibly another day"] = a.replace(m[0], f"{m[0]}, possibly moved to 18/04/{m[1]}")
    if "14:00" in a:
        out["possibly another time"] = a.replace("14:00", "14:00, possibly 16:30")
    return out


@pytest.mark.parametrize("name,w,d", DRAFTS, ids=[n for n, _, _ in DRAFTS])
def test_hedges_negations_guesses_and_tables_fail(name: str, w: World, d: TaskDraft) -> None:
    if not answer_checked(d):
        pytest.skip("no criterion reads the final answer")
    for label, text in attacks(d, w).items():
        got = scores(d, text)
        assert 0.0 in got.values() and got != scores(d, d.answer), f"{label}: {text!r} {got}"
        if label in ("hedged", "negated", "guesses", "table"):
            for v in answer_checked(d):
                c = v.verifier_values.kwrl_check
                if isinstance(c, SlotCheck) and c.type == "number":
                    assert got[v.verifier_id] == 0.0, f"{label}: {text!r} {got}"


def test_a_list_of_providers_or_people_fails() -> None:
    _, w, d = next(x for x in DRAFTS if x[0] == "Inv-chat_fact_lookup")
    providers = ["Datasite", "Intralinks", "Ansarada", "Firmex", "Box", "Egnyte", "iDeals",
                 "ShareFile", "Citrix", "Drooms", "DealRoom", "Dropbox", "SecureDocs"]  # fmt: skip
    lead = next(x.name for x in w.people if f"Posted by: {x.name}" in d.answer)
    answer = "Answer: " + ", ".join(providers) + f"\nPosted by: {lead}"
    got = scores(d, answer)
    assert got["c0"] == 0.0 and got["c1"] == 1.0, got
    for joiner in (" or ", ", ", " and "):
        everyone = joiner.join(x.name for x in w.people)
        assert (
            scores(d, d.answer.replace(f"Posted by: {lead}", f"Posted by: {everyone}"))["c1"] == 0.0
        )


# --------------------------------------------------------------------------- produced files

FILE_PARAPHRASES = {k: PARAPHRASES[k] for k in ("gold", "in words", "full scale", "rounded")}


def write_output(d: TaskDraft, root: Path, lines: list[str]) -> None:
    """The draft's output file as its gold call makes it, with `lines` as its text: a Word memo
    (heading, paragraphs) or a deck (title slide, one slide of bullets)."""
    path = root / "filesystem" / d.outputs[0].lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".docx":
        doc = docx.Document()
        doc.add_heading(lines[0], level=1)
        for line in lines[1:]:
            doc.add_paragraph(line)
        doc.save(str(path))
        return
    deck = pptx.Presentation()
    for slide_lines in (lines[:1], lines[1:]):  # a title slide, then the slide of bullets
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        frame = slide.shapes.add_textbox(Emu(0), Emu(0), Emu(9_000_000), Emu(900_000)).text_frame
        frame.text = slide_lines[0]
        for line in slide_lines[1:]:
            frame.add_paragraph().text = line
    deck.save(str(path))


def gold_lines(d: TaskDraft) -> list[str]:
    args = next(
        c.args for c in d.calls if c.tool in ("word_create_document", "powerpoint_create_deck")
    )
    if "content" in args:
        return [str(block["text"]) for block in args["content"]]
    title, slide = args["slides"][0]["title"], args["slides"][1]
    return [title, slide["title"], *slide["bullets"]["items"]]


FILE_DRAFTS = [x for x in DRAFTS if x[2].family in ("memo_doc", "new_deck")]


@pytest.mark.parametrize("name,w,d", FILE_DRAFTS, ids=[n for n, _, _ in FILE_DRAFTS])
def test_a_memo_or_deck_in_other_words_passes(
    name: str, w: World, d: TaskDraft, tmp_path: Path
) -> None:
    verifiers = Task("task_" + "0" * 32, "t", "t", d).verifiers(w.world_id)
    for label, para in FILE_PARAPHRASES.items():
        root = tmp_path / label.replace(" ", "-")
        write_output(d, root, [para(d, line) for line in gold_lines(d)])
        ev = Evidence.collect(
            task=d.prompt, answer=d.answer, initial=StateView.of([]), final=StateView.of([root])
        )
        got = {vid: g.score for vid, g in prepare(verifiers, ev).grades.items()}
        assert set(got.values()) == {1.0}, f"{label}: {got}"
