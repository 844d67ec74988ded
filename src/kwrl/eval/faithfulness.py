"""The faithfulness suite: honest and gamed deliverables, written as a careful judge would grade
them, through the real verifier of generated tasks.

A case (tests/fixtures/faithfulness/README.md: the format and the placeholder vocabulary) is a
template of an agent's deliverable for one task family: a final answer, a chat post, a mail, a
calendar event or an output file. For each generated task of the family, the harness fills the
template from the task's own facts (its world, its instruction's slot labels, its gold values
and their rivals), applies the deliverable to a copy of the task's world (posts, mail and events
through a real `kwrl world serve` gateway; docx/xlsx/pptx written with python-docx, openpyxl and
python-pptx at their paths), grades the final state with the verifier's own entry point
(`kwrl.grading.verify.grade_states`, no judge), and reads each criterion's verdict.

An honest case must pass every criterion it targets (a miss is a false negative); a gamed case
must not pass the one criterion it games (a pass is a false positive). Rates are of criteria.
`trial_script` turns a case into a task's solution/solve.sh, so a sample runs through real trials
(`kwrl trial run`) as a control that in-process and trial verdicts agree.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shlex
import shutil
import string
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kwrl.errors import TaskFormatError
from kwrl.tasks.taskdir import TaskDir, load_task, task_dirs

Kind = Literal["honest", "gamed"]
Verdict = Literal["pass", "fail", "undecided"]


# --------------------------------------------------------------------------- the case format


class SlideSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = ""
    bullets: list[str] = Field(default_factory=list)
    notes: str = ""
    """Speaker notes of the slide."""


class FileSpec(BaseModel):
    """What the output file holds; the path is the task's (`{out_path}`) unless `path` is given."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    paragraphs: list[str] = Field(default_factory=list)
    """docx: paragraphs (a new document: after its title; an edited one: appended at its end)."""
    title: str | None = None
    """docx/pptx: the new document's title (heading or title slide)."""
    cells: dict[str, str] = Field(default_factory=dict)
    """xlsx: 'Sheet!B2' -> value; a value that reads as one plain number is written as a number,
    one starting with ' is written as the text after it."""
    slides: list[SlideSpec] = Field(default_factory=list)
    """pptx: slides (a new deck: after its title slide; an edited one: appended at its end)."""
    copies: list[str] = Field(default_factory=list)
    """Further paths the same file is written to (copies beside the named one)."""
    only_copies: bool = False
    """Write the file only at `copies`, leaving the named path as it was."""


class EventSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = "{title}"
    date: str = "{date}"
    hour: str = "{hour}"
    attendees: list[str] = Field(default_factory=lambda: ["{attendee_emails}"])
    """Emails; an entry holding several comma-separated emails adds each."""


class Case(BaseModel):
    """One deliverable template and the verdict a careful judge gives it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    kind: Kind
    why: str = ""
    """What the case tries (a hedge, context with other figures, ...)."""
    target: list[int] | Literal["all"] = "all"
    """Criteria (1-based, in the rubric's order; -1 the last) whose verdict the case states: an
    honest case usually `all`; a gamed case the one it games."""
    verdict: Verdict | None = None
    """The judge's verdict on `target`: honest cases default to pass, gamed ones to fail."""
    answer: str | None = None
    post: str | None = None
    """A message posted to the task's channel (`{channel}`)."""
    posts: list[str] = Field(default_factory=list)
    """Further messages to the same channel."""
    mail: str | None = None
    mails: list[str] = Field(default_factory=list)
    """Further mail bodies, sent the same way as `mail`."""
    """A mail body: a reply to the task's request (reply_figure), or a new mail to `mail_to`."""
    mail_to: str = "{mail_to}"
    mail_subject: str = "{mail_subject}"
    event: EventSpec | None = None
    file: FileSpec | None = None
    domains: list[str] = Field(default_factory=list)
    """Only for tasks of these domains (empty: every domain)."""

    def expected(self) -> Verdict:
        return self.verdict or ("pass" if self.kind == "honest" else "fail")


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    family: str
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Fields every case of the file takes unless it sets them (e.g. the honest mail a case
    gaming the post keeps)."""
    cases: list[dict[str, Any]]


def load_cases(root: Path) -> dict[str, list[Case]]:
    """Every `*.yaml` under `root` -> cases by family. Bad input: a `TaskFormatError` naming the
    file and field."""
    from kwrl.synth.tasks import FAMILIES

    out: dict[str, list[Case]] = defaultdict(list)
    files = sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    if not files:
        raise TaskFormatError(root, None, "no *.yaml case files")
    for path in files:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            raise TaskFormatError(path, None, f"unreadable YAML: {e}") from e
        try:
            cf = CaseFile.model_validate(raw)
        except ValidationError as e:
            first = e.errors()[0]
            raise TaskFormatError(path, ".".join(map(str, first["loc"])), first["msg"]) from e
        if cf.family not in FAMILIES:
            raise TaskFormatError(path, "family", f"unknown family {cf.family!r}")
        seen: set[str] = set()
        for i, c in enumerate(cf.cases):
            merged = {**cf.defaults, **c}
            if cf.family == "schedule" and "event" not in merged:
                merged["event"] = {}  # the gold booking; `event: null` books none
            try:
                case = Case.model_validate(merged)
            except ValidationError as e:
                first = e.errors()[0]
                loc = ".".join(map(str, first["loc"]))
                raise TaskFormatError(path, f"cases[{i}].{loc}", first["msg"]) from e
            if case.id in seen:
                raise TaskFormatError(path, f"cases[{i}].id", f"duplicate id {case.id!r}")
            if case.kind == "gamed" and case.target == "all":
                raise TaskFormatError(
                    path, f"cases[{i}].target", "a gamed case names the criteria it games"
                )
            seen.add(case.id)
            out[cf.family].append(case)
    return dict(out)


# --------------------------------------------------------------------------- a task's facts


UNIT_WORDS = {"$m": "$ millions", "$k": "$ thousands", "$bn": "$ billions", "hours": "hours"}
SCALE = {"$m": 1e6, "$k": 1e3, "$bn": 1e9, "m": 1e6}


def _slots(instruction: str) -> list[str]:
    """The slot labels the instruction's answer contract names, in order: a backticked
    `Label: <...>` (the generated tasks' contract) or a line `Label: <...>`."""
    labels = re.findall(r"`\s*([^`:<>\n]{1,60}?)\s*:\s*<[^`>]*>[^`]*`", instruction)
    if not labels:
        labels = re.findall(r"^\s*([A-Za-z][^:<>\n]{0,60}?)\s*:\s*<[^>\n]*>", instruction, re.M)
    return labels


def _num_text(v: float, unit: str) -> str:
    return f"{v:,.0f}" if unit == "hours" else f"{v:,.1f}"


@dataclass
class Facts:
    values: dict[str, Any] = field(default_factory=dict)

    def __setitem__(self, k: str, v: Any) -> None:
        self.values[k] = v

    def number(self, name: str, v: float, unit: str, text: str | None = None) -> None:
        """`name` (the float: format specs apply), `name_text` (as the files print it),
        `name_raw` (in whole units: $m x 1e6), `name_unit`."""
        self.values[name] = v
        self.values[f"{name}_text"] = text if text is not None else _num_text(v, unit)
        self.values[f"{name}_raw"] = v * SCALE.get(unit, 1.0)
        self.values[f"{name}_unit"] = unit
        raw = v * SCALE.get(unit, 1.0)
        plain = self.values[f"{name}_text"].rstrip("%x")
        if unit.startswith("$"):
            word = {"$m": "million", "$k": "thousand", "$bn": "billion"}.get(unit, "")
            full, long, alt = f"${raw:,.0f}", f"${plain} {word}".rstrip(), f"USD {plain}{unit[1:]}"
        elif unit == "%":
            full, long, alt = f"{v:.2f}%", f"{v:.2f} percent", f"{v:.2f} per cent"
        elif unit == "x":
            full, long, alt = f"{v:.2f}x", f"{v:.2f} times", f"{v:.2f}×"
        elif unit:
            full, long, alt = f"{plain} {unit}", f"{plain} {unit}", f"{plain} {unit}"
        else:
            full = long = alt = plain
        self.values[f"{name}_full"] = full
        self.values[f"{name}_long"] = long
        self.values[f"{name}_alt"] = alt


def _world(seed: int, index: int, domain: str, n_tasks: int) -> tuple[Any, list[Any]]:
    from kwrl.synth.render import plan_files
    from kwrl.synth.tasks import plan_tasks
    from kwrl.synth.world import plan_world

    w = plan_world(seed, index, domain)
    plan_files(w)
    return w, plan_tasks(w, n_tasks)


_WORLDS: dict[tuple[int, int, str, int], tuple[Any, list[Any]]] = {}


def family_of(task: TaskDir) -> str:
    return str(task.config_raw.get("metadata", {}).get("family", ""))


@dataclass
class _Task:
    """What `task_facts`' per-family readers share: the generated world, the task's project and
    draft, its instruction and the facts being filled."""

    w: Any
    p: Any
    d: Any
    ins: str
    f: Facts

    @property
    def table(self) -> Any:
        return self.p.table

    @property
    def periods(self) -> list[str]:
        return self.p.table.periods


def task_facts(task: TaskDir) -> dict[str, Any]:
    """The placeholders of a generated task (README beside the fixtures lists them)."""
    md = task.config_raw.get("metadata", {})
    k = int(task.slug.split("-")[2])
    key = (int(md["seed"]), int(md["world_index"]), str(task.meta.domain), k + 1)
    if key not in _WORLDS:
        _WORLDS[key] = _world(*key)
    w, tasks = _WORLDS[key]
    t = tasks[k]
    d = t.draft
    fam = d.family
    code = t.name.split(":")[0]
    p = next(x for x in w.projects if x.code == code)
    c = _Task(w, p, d, task.instruction, Facts())
    others = [x for x in w.people if x.last != p.lead.last and x is not w.me]
    other_p = next(x for x in w.projects if x is not p)
    c.f.values.update(
        project=p.code, short=p.short, client=p.client.name, counterparty=p.counterparty.name,
        lead=p.lead.name, lead_first=p.lead.first, lead_last=p.lead.last, lead_email=p.lead.email,
        me=w.me.name, me_first=w.me.first, me_email=w.me.email, channel=p.channel, firm=w.firm.name,
        person=others[0].name, person_last=others[0].last, person2=others[1].name,
        other_project=other_p.code, domain=w.domain, mail_to=p.lead.email,
        mail_subject=f"{p.code}", out_path=(d.outputs[0] if d.outputs else ""),
        out_file=(d.outputs[0].rsplit("/", 1)[-1] if d.outputs else ""),
        out_dir=(d.outputs[0].rsplit("/", 1)[0] if d.outputs else "/Outputs"),
    )  # fmt: skip
    reader = next((r for fams, r in _FAMILY_FACTS if fam in fams), None)
    if reader is not None:
        reader(c, fam)
    contract_slots(fam, c.f.values, _slots(c.ins))
    return c.f.values


def _row_facts(c: _Task, row: str, period: str, prev: str | None = None) -> None:
    f, table, periods, d = c.f, c.table, c.periods, c.d
    unit = table.units[row]
    f["row"], f["unit"], f["period"] = row, unit, period
    f["unit_words"] = UNIT_WORDS.get(unit, unit)
    f.number("v", table.get(row, period), unit)
    j = periods.index(period)
    prev = prev or periods[j - 1 if j else 1]
    f["prev"] = prev
    f.number("pv", table.get(row, prev), unit)
    f["v_minus_pv"] = table.get(row, period) - table.get(row, prev)
    q = re.fullmatch(r"Q(\d) (\d{4})", period)
    f["period_alt"] = (
        f"{q.group(1)}Q{q.group(2)[2:]}" if q else re.sub(r"FY20(\d\d)", r"FY\1", period)
    )
    other_period = next(x for x in reversed(periods) if x not in (period, prev))
    f["other_period"] = other_period
    f.number("ov", table.get(row, other_period), unit)
    other_row = next(r for r in table.rows if r != row)
    f["other_row"] = other_row
    f.number("orv", table.get(other_row, period), table.units[other_row])
    f["path"] = d.input_files[0] if d.input_files else ""
    f["file"] = f.values["path"].rsplit("/", 1)[-1]


def _metric_facts(c: _Task, m: Any, prefix: str = "m") -> None:
    from kwrl.synth.families.metrics import metrics

    f = c.f
    f[f"{prefix}_label"] = m.label
    f[f"{prefix}_label_cap"] = m.label[:1].upper() + m.label[1:]
    f.number(prefix, m.value, m.unit, m.text)
    f[f"{prefix}_pct"] = m.unit == "%"
    for i, (label, v, where) in enumerate(m.inputs, 1):
        f[f"in{i}_label"] = label
        f[f"in{i}_name"] = re.sub(r"\s*\([^()]*\)\s*$", "", label)
        u = re.search(r"\(([^()]+)\)\s*$", label)
        f.number(f"in{i}", v, u.group(1) if u else "", f"{v:,.1f}")
        f[f"in{i}_source"] = where
    f["inputs_inline"] = "; ".join(f"{lab}: {v:,.1f}" for lab, v, _ in m.inputs)
    rival = next((x for x in metrics(c.w, c.p) if x.key != m.key and x.unit == m.unit), None)
    rival = rival or next(x for x in metrics(c.w, c.p) if x.key != m.key)
    f[f"{prefix}_rival_label"] = rival.label
    f.number(f"{prefix}_rival", rival.value, rival.unit, rival.text)


def _metrics_in_prompt(c: _Task) -> list[Any]:
    from kwrl.synth.families.metrics import metrics

    found = [(c.ins.find(m.label), m) for m in metrics(c.w, c.p) if m.label in c.ins]
    return [m for _, m in sorted(found, key=lambda x: x[0])]


def _fact_facts(c: _Task, key: str) -> None:
    from kwrl.synth.cast import fmt

    f, p, w = c.f, c.p, c.w
    fact = p.facts[key]
    f["what"] = fact.label.lower()
    f["fact"] = fact.text
    if isinstance(fact.value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", fact.text):
            dd = date.fromisoformat(fact.text)
            f["fact_kind"] = "date"
            f["fact_alt"] = f"{dd:%B} {dd.day}, {dd.year}"
            f["fact_alt2"] = f"{dd.day} {dd:%B} {dd.year}"
        else:
            f["fact_kind"] = "text"
            f["fact_alt"] = fact.text
            f["fact_alt2"] = fact.text
    else:
        f["fact_kind"] = "number"
        raw = float(fact.value) * SCALE.get(fact.unit, 1.0)
        f["fact_alt"] = (
            f"${raw:,.0f}" if fact.unit.startswith("$") and fact.unit != "$ps" else fact.text
        )
        f["fact_alt2"] = fact.text.replace("$", "USD ") if "$" in fact.text else fact.text
    rivals = [q.facts[key].text for q in w.projects if key in q.facts and q is not p]
    rivals = [r for r in rivals if r != fact.text]
    f["rival"] = rivals[0] if rivals else fact.text
    f["rival2"] = rivals[1] if len(rivals) > 1 else f.values["rival"]
    # the preliminary figure the lead's mail gives (the fact x 1.2), for a number
    f["prelim"] = (
        f.values["rival"] if isinstance(fact.value, str) else fmt(round(float(fact.value) * 1.2, 1), fact.unit)
    )  # fmt: skip


def _named_row(c: _Task) -> str:
    return next(
        r for r in sorted(c.table.rows, key=len, reverse=True) if r.lower() in c.ins.lower()
    )


def _table_lookup_facts(c: _Task, fam: str) -> None:
    found = sorted((c.ins.find(x), x) for x in c.periods if x in c.ins)
    _row_facts(c, _named_row(c), found[0][1], found[1][1] if len(found) > 1 else None)


def _chat_post_facts(c: _Task, fam: str) -> None:
    _row_facts(c, _named_row(c), c.periods[-1])


def _reply_figure_facts(c: _Task, fam: str) -> None:
    f = c.f
    mail_id, row, period = c.w.requests[c.p.code]
    _row_facts(c, row, period)
    mail = next(m for m in c.w.mails if m.message_id == mail_id)
    f["contact"] = mail.sender.split("<")[1].rstrip(">")
    f["subject"] = mail.subject
    f["mail_id"] = mail_id
    f["request_from"] = mail.sender
    f["request_line"] = max(mail.body.splitlines(), key=len).strip()


def _reconcile_deck_facts(c: _Task, fam: str) -> None:
    f, d, table, periods = c.f, c.d, c.table, c.periods
    review = d.input_files[0]
    from pptx import Presentation

    deck = Presentation(io.BytesIO(d.overlay["filesystem" + review]()))
    wrong_row = wrong_period = ""
    wrong = 0.0
    for shape in deck.slides[-1].shapes:
        if not shape.has_table:
            continue
        rows = [[c.text for c in r.cells] for r in shape.table.rows]  # type: ignore[attr-defined]
        for r in rows[1:]:
            name = re.sub(r"\s*\([^()]*\)\s*$", "", r[0])
            for j, cell in enumerate(r[1:]):
                if name in table.rows and cell.replace(",", "") != _num_text(
                    table.get(name, periods[j]), table.units[name]
                ).replace(",", ""):
                    wrong_row, wrong_period, wrong = (
                        name,
                        periods[j],
                        float(cell.replace(",", "")),
                    )
    _row_facts(c, wrong_row, wrong_period)
    f.number("wrong", wrong, table.units[wrong_row])
    f["review"], f["model"] = review, d.input_files[1]
    f["review_file"] = review.rsplit("/", 1)[-1]


def _fact_lookup_facts(c: _Task, fam: str) -> None:
    f, p, w, d, ins = c.f, c.p, c.w, c.d, c.ins
    key = next(
        k for k, x in sorted(p.facts.items(), key=lambda kv: -len(kv[1].label))
        if x.label.lower() in ins.lower()
    )  # fmt: skip
    _fact_facts(c, key)
    f["path"] = d.input_files[0] if d.input_files else ""
    if fam == "calendar_lookup":
        dd = date.fromisoformat(str(p.facts[key].value))
        f.values.update(
            date=dd.isoformat(), date_long=f"{dd:%B} {dd.day}, {dd.year}", weekday=f"{dd:%A}",
            date_day_month=f"{dd.day} {dd:%B} {dd.year}", date_short=f"{dd:%d-%b-%Y}",
            time="14:00", time_12="2 pm", end="15:00", end_12="3 pm",
        )  # fmt: skip
        other = next(
            (q.facts[key].text for q in w.projects if q is not p and q.facts[key].text != p.facts[key].text),
            (dd.replace(day=dd.day % 27 + 1)).isoformat(),
        )  # fmt: skip
        od = date.fromisoformat(other)
        f["rival_date"] = other
        f["rival_date_long"] = f"{od:%B} {od.day}, {od.year}"


def _clause_review_facts(c: _Task, fam: str) -> None:
    f, p = c.f, c.p
    bad = [c for c in p.clauses if not c.compliant]
    good = [c for c in p.clauses if c.compliant]
    f["contract"] = p.files["contract"]
    f["bad_list"] = "\n".join(
        f"- Clause {c.number} ({c.name}): the playbook requires {c.policy[0].lower()}{c.policy[1:]}"
        for c in bad
    )
    f["bad_table"] = "\n".join(f"| {c.number} | {c.name} | {c.policy} |" for c in bad)
    f["bad_inline"] = "; ".join(f"clause {c.number} ({c.name})" for c in bad)
    f["bad_names"] = ", ".join(c.name for c in bad)
    f["bad_count"] = len(bad)

    def joined(nums: list[str]) -> str:
        return nums[0] if len(nums) == 1 else ", ".join(nums[:-1]) + " and " + nums[-1]

    f["bad_numbers"] = joined([c.number for c in bad])
    f["bad_numbers_semi"] = "; ".join(c.number for c in bad)
    f["bad_numbers_rev"] = joined([c.number for c in reversed(bad)])
    f["bad_rest_numbers"] = joined([c.number for c in bad[1:]] or [bad[0].number])
    f["good_numbers"] = joined([c.number for c in good])
    f["all_numbers"] = ", ".join(c.number for c in sorted(p.clauses, key=lambda c: c.number))
    f["bad_rest"] = "\n".join(
        f"- Clause {c.number} ({c.name}): the playbook requires {c.policy[0].lower()}{c.policy[1:]}"
        for c in bad[1:]
    )
    f["bad1_number"], f["bad1_name"], f["bad1_policy"] = (
        bad[0].number,
        bad[0].name,
        bad[0].policy,
    )
    f["good1_number"], f["good1_name"] = good[0].number, good[0].name
    f["good1_policy"] = good[0].policy
    f["good2_number"], f["good2_name"] = (
        (good[1].number, good[1].name) if len(good) > 1 else (good[0].number, good[0].name)
    )


def _schedule_facts(c: _Task, fam: str) -> None:
    f, w, d = c.f, c.w, c.d
    ev = next(c for c in d.calls if c.tool == "calendar_create_event")
    start = ev.args["start"]["dateTime"]
    hour = int(start[11:13])
    emails = [a["email"] for a in ev.args["attendees"]]
    by_email = {x.email: x.name for x in w.people}
    names = [by_email.get(e, e) for e in emails]
    dd = date.fromisoformat(start[:10])
    f.values.update(
        title=ev.args["summary"], date=start[:10], hour=f"{hour:02d}", hour_text=f"{hour:02d}:00",
        hour_12=f"{hour % 12 or 12} {'pm' if hour >= 12 else 'am'}", end_text=f"{hour + 1:02d}:00",
        hour_wrong=f"{(hour + 2 if hour <= 14 else hour - 2):02d}", date_long=f"{dd:%B} {dd.day}, {dd.year}",
        weekday=f"{dd:%A}", attendee_emails=",".join(emails), attendees=" and ".join(names),
        attendee1_email=emails[0], attendee1=names[0] if names else emails[0],
        date_wrong=(dd.replace(day=dd.day + 1 if dd.day < 27 else dd.day - 1)).isoformat(),
        hour_wrong_text=f"{(hour + 2 if hour <= 14 else hour - 2):02d}:00",
    )  # fmt: skip
    rest = [e for e in emails[1:]]
    f["attendee_emails_but_first"] = ",".join(rest)
    f["outsider_email"] = next(x.email for x in w.people if x.email not in emails and x is not w.me)


def _metric_family_facts(c: _Task, fam: str) -> None:
    f, p, d = c.f, c.p, c.d
    _metric_facts(c, _metrics_in_prompt(c)[0])
    if fam == "brief_team":
        f["mail_subject"] = f"{p.code}: {f.values['m_label']}"
    if fam in ("edit_sheet", "edit_doc", "edit_deck"):
        f["out_path"] = d.outputs[0]


def _summary_sheet_facts(c: _Task, fam: str) -> None:
    ms = _metrics_in_prompt(c)
    _metric_facts(c, ms[0], "m1")
    _metric_facts(c, ms[1], "m2")


def _new_deck_facts(c: _Task, fam: str) -> None:
    f, p, table, periods = c.f, c.p, c.table, c.periods
    row = next(iter(table.rows))
    unit = table.units[row]
    last, prev = periods[-1], periods[-2]
    vl, vp = table.get(row, last), table.get(row, prev)
    ch = (vl / vp - 1) * 100
    f.values.update(row=row, last=last, prev=prev, unit=unit, word="increase" if ch >= 0 else "decrease",
                    deck_title=f"{p.code} update")  # fmt: skip
    f.number("vl", vl, unit)
    f.number("vp", vp, unit)
    f.number("change", abs(ch), "%", f"{abs(ch):.2f}%")
    f["change_signed"] = ch
    other = periods[-3]
    f["other_period"] = other
    f.number("ov", table.get(row, other), unit)
    f.number("change_wrong", abs((vl / table.get(row, other) - 1) * 100), "%")


_FAMILY_FACTS: tuple[tuple[tuple[str, ...], Callable[[_Task, str], None]], ...] = (
    (("table_lookup",), _table_lookup_facts),
    (("chat_post",), _chat_post_facts),
    (("reply_figure",), _reply_figure_facts),
    (("reconcile_deck",), _reconcile_deck_facts),
    (("file_fact_lookup", "mail_fact_lookup", "chat_fact_lookup", "calendar_lookup"), _fact_lookup_facts),
    (("clause_review",), _clause_review_facts),
    (("schedule",), _schedule_facts),
    (("compute", "brief_team", "memo_doc", "edit_sheet", "edit_doc", "edit_deck"), _metric_family_facts),
    (("summary_sheet",), _summary_sheet_facts),
    (("new_deck",), _new_deck_facts),
)  # fmt: skip
"""Each family's reader of its placeholders (README beside the fixtures), in `task_facts`."""


def _slot_labels(fam: str, v: dict[str, Any]) -> list[tuple[str, str]]:
    """(placeholder, label) of each slot of the family's answer contract, in the order its
    instruction names them (docs/contracts.md, "The slots of each family")."""
    metric = [("slot", v.get("m_label", "")), ("slot_in1", v.get("in1_label", "")),
              ("slot_in2", v.get("in2_label", ""))]  # fmt: skip
    return {
        "table_lookup": [("slot_v", f"{v.get('row')} {v.get('period')}"), ("slot_pv", f"{v.get('row')} {v.get('prev')}")],
        "file_fact_lookup": [("slot", "Answer")],
        "mail_fact_lookup": [("slot", "Answer"), ("slot_who", "Sent by")],
        "chat_fact_lookup": [("slot", "Answer"), ("slot_who", "Posted by")],
        "calendar_lookup": [("slot_date", "Date"), ("slot_time", "Start time")],
        "chat_post": [("slot", f"{v.get('row')} {v.get('period')}")],
        "compute": metric,
        "reconcile_deck": [("slot_which", "Wrong figure"), ("slot_deck", "Deck shows"), ("slot_correct", "Correct value")],
        "clause_review": [("slot", "Deviating clauses")],
        "reply_figure": [("slot", str(v.get("row"))), ("slot_period", "Period")],
        "schedule": [("slot", "Start time")],
        "brief_team": metric,
        "memo_doc": metric,
        "edit_doc": metric,
        "edit_deck": metric,
        "new_deck": [("slot_vp", f"{v.get('row')} {v.get('prev')}"), ("slot_vl", f"{v.get('row')} {v.get('last')}"),
                     ("slot_change", f"{v.get('row')} {v.get('word')} {v.get('prev')} to {v.get('last')}")],
    }.get(fam, [("slot", "Answer")])  # fmt: skip


def contract_slots(fam: str, v: dict[str, Any], named: list[str]) -> None:
    """Fill the slot placeholders: the labels the instruction names, in order, where it names at
    least as many as the family has (brief_team names its metric's slot twice: mail, then post
    and answer), else the contract's labels built from the world's facts."""
    slots = _slot_labels(fam, v)
    labels = named[: len(slots)] if len(named) >= len(slots) else [label for _, label in slots]
    for (key, _), label in zip(slots, labels, strict=True):
        v[key] = label
    v.setdefault("slot", labels[0])


# --------------------------------------------------------------------------- rendering


class _Fmt(string.Formatter):
    def get_value(self, key: int | str, args: Any, kwargs: Any) -> Any:
        if isinstance(key, int) or key not in kwargs:
            raise KeyError(key)
        return kwargs[key]


def fill(template: str, facts: dict[str, Any]) -> str:
    return _Fmt().vformat(template, (), facts)


def render(case: Case, facts: dict[str, Any]) -> Case:
    """The case with every string filled from `facts`; a `KeyError` names an unknown placeholder."""

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return fill(x, facts)
        if isinstance(x, list):
            return [walk(i) for i in x]
        if isinstance(x, dict):
            return {walk(k): walk(v) for k, v in x.items()}
        return x

    data = case.model_dump()
    try:
        filled = {k: walk(data[k]) for k in _FILLED}
    except KeyError as e:
        raise KeyError(f"case {case.id}: unknown placeholder {{{e.args[0]}}}") from None
    data.update(filled)
    return Case.model_validate(data)


_FILLED = ("answer", "post", "posts", "mail", "mails", "mail_to", "mail_subject", "event", "file")


# --------------------------------------------------------------------------- files


def _cell_value(text: str) -> Any:
    if text.startswith("'"):
        return text[1:]
    try:
        return float(text) if re.fullmatch(r"-?\d+(\.\d+)?", text.strip()) else text
    except ValueError:
        return text


def file_bytes(spec: FileSpec, path: str, existing: bytes | None) -> bytes:
    """The output file `spec` describes, at `path` (its extension picks the format), on top of
    `existing` (an edited file) when given."""
    buf = io.BytesIO()
    if path.endswith(".docx"):
        from docx import Document

        doc = Document(io.BytesIO(existing)) if existing else Document()
        if existing is None and spec.title:
            doc.add_heading(spec.title, level=1)
        for ptext in spec.paragraphs:
            doc.add_paragraph(ptext)
        doc.save(buf)
    elif path.endswith(".xlsx"):
        from openpyxl import Workbook, load_workbook

        wb = load_workbook(io.BytesIO(existing)) if existing else Workbook()
        fresh = existing is None
        for ref, value in spec.cells.items():
            sheet, _, cell = ref.rpartition("!")
            sheet = sheet.strip("'") or "Sheet1"
            if sheet not in wb.sheetnames:
                if fresh and wb.active is not None and wb.active.title == "Sheet":
                    wb.active.title = sheet
                else:
                    wb.create_sheet(sheet)
            fresh = False
            wb[sheet][cell] = _cell_value(value)
        wb.save(buf)
    elif path.endswith(".pptx"):
        from pptx import Presentation

        prs = Presentation(io.BytesIO(existing)) if existing else Presentation()
        if existing is None and spec.title:
            s = prs.slides.add_slide(prs.slide_layouts[0])
            s.shapes.title.text = spec.title  # type: ignore[union-attr]
        for sl in spec.slides:
            s = prs.slides.add_slide(prs.slide_layouts[1])
            s.shapes.title.text = sl.title  # type: ignore[union-attr]
            body = s.placeholders[1].text_frame  # type: ignore[union-attr]
            for i, b in enumerate(sl.bullets):
                para = body.paragraphs[0] if i == 0 else body.add_paragraph()
                para.text = b
            if sl.notes:
                s.notes_slide.notes_text_frame.text = sl.notes  # type: ignore[union-attr]
        prs.save(buf)
    else:
        buf.write("\n".join(spec.paragraphs).encode())
    return buf.getvalue()


def file_writes(case: Case, facts: dict[str, Any], layers: list[Path]) -> dict[str, bytes]:
    """Model-facing path -> bytes of every file the case writes (an edited file starts from the
    task's own: the last of `layers`, world roots, that holds it)."""
    spec = case.file
    if spec is None:
        return {}
    path = spec.path or str(facts["out_path"])
    existing = None
    for layer in layers:
        src = layer / "filesystem" / path.lstrip("/")
        if src.is_file():
            existing = src.read_bytes()
    data = file_bytes(spec, path, existing)
    out = {} if spec.only_copies else {path: data}
    for c in spec.copies:
        out[c] = data
    return out


# --------------------------------------------------------------------------- applying and grading


@dataclass
class Outcome:
    family: str
    task: str
    case: str
    kind: Kind
    expected: Verdict
    verdicts: dict[int, Verdict]
    """Criterion number -> the verifier's verdict (pass, fail; undecided where the grade says so)."""
    rationales: dict[int, str]
    targets: list[int]

    def wrong(self) -> list[int]:
        """Targeted criteria whose verdict disagrees with the judge's: for honest cases, those not
        passing; for gamed ones, those passing."""
        if self.kind == "honest":
            return [i for i in self.targets if self.verdicts.get(i) != "pass"]
        return [i for i in self.targets if self.verdicts.get(i) == "pass"]


def _verdict(g: Any) -> Verdict:
    """A criterion's verdict from its grade: a grader that marks what its check could not decide
    (`undecided`) has those criteria undecided (failed, with no judge)."""
    if g.passed:
        return "pass"
    return "undecided" if getattr(g, "undecided", False) else "fail"


def reset_root(root: Path, task: TaskDir) -> None:
    for sub in ("filesystem", ".apps_data"):
        shutil.rmtree(root / sub, ignore_errors=True)
        shutil.copytree(task.world_dir / sub, root / sub)
        if (task.overlay_dir / sub).is_dir():
            shutil.copytree(task.overlay_dir / sub, root / sub, dirs_exist_ok=True)


def tool_calls(case: Case, facts: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The app calls that deliver the case's posts, mail and event."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for msg in [*([case.post] if case.post is not None else []), *case.posts]:
        calls.append(("chat_post_message", {"channel_id": facts["channel"], "message": msg}))
    for body in [*([case.mail] if case.mail is not None else []), *case.mails]:
        if "mail_id" in facts:
            calls.append(("mail_reply_mail", {"original_mail_id": facts["mail_id"], "body": body}))
        else:
            calls.append((
                "mail_send_mail",
                {"from_email": facts["me_email"], "to_email": case.mail_to, "subject": case.mail_subject,
                 "body": body},
            ))  # fmt: skip
    if case.event is not None:
        e = case.event
        h = int(e.hour)
        emails = [x.strip() for a in e.attendees for x in a.split(",") if x.strip()]
        calls.append((
            "calendar_create_event",
            {"summary": e.title, "start": {"dateTime": f"{e.date}T{h:02d}:00:00"},
             "end": {"dateTime": f"{e.date}T{h + 1:02d}:00:00"},
             "attendees": [{"email": x} for x in emails]},
        ))  # fmt: skip
    return calls


class Gateway:
    """A real `kwrl world serve` over a world root, as the trial's gateway serves it."""

    def __init__(self, root: Path, sock: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kwrl.cli", "world", "serve", str(root), "--uds", str(sock), "--in_place"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "kwrl-gateway ready" not in line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.proc.kill()
            raise RuntimeError(f"gateway did not start: {line!r} {err[-2000:]}")
        self.url = line.split()[-1]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def run_cases(
    tasks: list[TaskDir], cases: dict[str, list[Case]], work: Path
) -> list[Outcome]:
    """Every case of each task's family through the real verifier, in-process."""
    from kwrl.grading.diff import StateView, task_layers
    from kwrl.grading.verify import grade_states
    from kwrl.worlds.client import GatewayClient

    outcomes: list[Outcome] = []
    by_world: dict[Path, list[TaskDir]] = defaultdict(list)
    for t in tasks:
        if cases.get(family_of(t)):
            by_world[t.world_dir].append(t)
    for n, (_wdir, wtasks) in enumerate(sorted(by_world.items())):
        # The gateway serves a root holding the apps' data only; a case's final state is the
        # task's layers under that root (its apps' data, and the files the case wrote).
        root = work / f"w{n}"
        reset_apps(root, wtasks[0])
        gw = Gateway(root, work / f"w{n}.sock")
        try:
            async with GatewayClient(gw.url) as client:
                for t in wtasks:
                    fam = family_of(t)
                    facts = task_facts(t)
                    layers = task_layers(t.world_dir, t.overlay_dir)
                    initial = StateView.of(layers)
                    for case in cases[fam]:
                        if case.domains and t.meta.domain not in case.domains:
                            continue
                        c = render(case, facts)
                        calls = tool_calls(c, facts)
                        writes = file_writes(c, facts, layers)
                        final = initial
                        if calls or writes:
                            reset_apps(root, t)
                            for tool, args in calls:
                                res = await client.call_flat(tool, args)
                                if res.is_error:
                                    raise RuntimeError(
                                        f"{fam}/{case.id} on {t.slug}: {tool} failed: {res.content}"
                                    )
                            for path, data in writes.items():
                                dst = root / "filesystem" / path.lstrip("/")
                                dst.parent.mkdir(parents=True, exist_ok=True)
                                dst.write_bytes(data)
                            final = StateView.of([*layers, root])
                        grades = await grade_states(
                            verifiers=t.verifiers, task=t.instruction, answer=c.answer or "",
                            initial=initial, final=final, judge_config=None,
                        )  # fmt: skip
                        outcomes.append(_outcome(fam, t, case, grades.grades))
        finally:
            gw.close()
    return outcomes


def reset_apps(root: Path, task: TaskDir) -> None:
    """`root`: the task's apps' data (world seed, then overlay) and an empty filesystem."""
    for sub in ("filesystem", ".apps_data"):
        shutil.rmtree(root / sub, ignore_errors=True)
    (root / "filesystem").mkdir(parents=True)
    shutil.copytree(task.world_dir / ".apps_data", root / ".apps_data")
    if (task.overlay_dir / ".apps_data").is_dir():
        shutil.copytree(task.overlay_dir / ".apps_data", root / ".apps_data", dirs_exist_ok=True)


def _outcome(fam: str, t: TaskDir, case: Case, grades: list[Any]) -> Outcome:
    verdicts: dict[int, Verdict] = {i: _verdict(g) for i, g in enumerate(grades, 1)}
    n = len(verdicts)
    targets = (
        list(verdicts) if case.target == "all" else [i if i > 0 else n + 1 + i for i in case.target]
    )
    targets = [i for i in targets if i in verdicts]
    return Outcome(
        family=fam, task=t.slug, case=case.id, kind=case.kind, expected=case.expected(),
        verdicts=verdicts, rationales={i: g.rationale for i, g in enumerate(grades, 1)},
        targets=targets,
    )  # fmt: skip


# --------------------------------------------------------------------------- datasets


def synth(
    out: Path, seeds: list[int], per_family: int, worlds: int = 3, tasks_per_world: int = 20
) -> list[TaskDir]:
    """`kwrl data synth` per seed into `out/seed-N`; the first `per_family` tasks of each family."""
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.synth.tasks import FAMILIES

    picked: dict[str, list[TaskDir]] = defaultdict(list)
    for seed in seeds:
        ds = out / f"seed-{seed}"
        if not (ds / "tasks").is_dir():
            cfg = SynthConfig(
                out=ds, worlds=worlds, tasks_per_world=tasks_per_world, seed=seed, workers=1
            )
            generate(cfg, progress=False)
        for p in task_dirs(ds / "tasks"):
            t = load_task(p)
            fam = family_of(t)
            if len(picked[fam]) < per_family:
                picked[fam].append(t)
    return [t for fam in FAMILIES for t in picked.get(fam, [])]


def default_tasks(out: Path, per_family: int = 1) -> list[TaskDir]:
    """Seed 4's Law world draws all 18 families in 18 tasks; more per family adds seed 11's three
    worlds."""
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.synth.tasks import FAMILIES

    ds = out / "seed-4-law"
    if not (ds / "tasks").is_dir():
        cfg = SynthConfig(out=ds, worlds=1, tasks_per_world=18, seed=4, workers=1, domains=["Law"])
        generate(cfg, progress=False)
    picked: dict[str, list[TaskDir]] = defaultdict(list)
    for p in task_dirs(ds / "tasks"):
        t = load_task(p)
        picked[family_of(t)].append(t)
    if per_family > 1:
        for t in synth(out, [11, 12], per_family):
            if len(picked[family_of(t)]) < per_family:
                picked[family_of(t)].append(t)
    return [t for fam in FAMILIES for t in picked.get(fam, [])[:per_family]]


# --------------------------------------------------------------------------- rates


@dataclass
class Rates:
    honest: int = 0
    fn: int = 0
    gamed: int = 0
    fp: int = 0
    undecided: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def fn_rate(self) -> float:
        return self.fn / self.honest if self.honest else 0.0

    @property
    def fp_rate(self) -> float:
        return self.fp / self.gamed if self.gamed else 0.0


def rates(outcomes: list[Outcome]) -> dict[str, Rates]:
    """Per family and `total`: honest criteria and false negatives, gamed criteria and false
    positives, undecided verdicts among the targeted criteria."""
    out: dict[str, Rates] = defaultdict(Rates)
    for o in outcomes:
        for r in (out[o.family], out["total"]):
            n = len(o.targets)
            wrong = o.wrong()
            r.undecided += sum(1 for i in o.targets if o.verdicts[i] == "undecided")
            if o.kind == "honest":
                r.honest += n
                r.fn += len(wrong)
            else:
                r.gamed += n
                r.fp += len(wrong)
            for i in wrong:
                if r is out[o.family]:
                    r.misses.append(
                        f"{o.task} {o.case} c{i} {o.verdicts[i]}: {o.rationales[i][:160]}"
                    )
    return dict(out)


def table(r: dict[str, Rates]) -> str:
    lines = [
        f"{'family':<18} {'honest':>6} {'FN':>4} {'FN%':>6} {'gamed':>6} {'FP':>4} {'FP%':>6} {'undec':>5}"
    ]
    for fam in [*sorted(k for k in r if k != "total"), "total"]:
        x = r.get(fam)
        if x is None:
            continue
        lines.append(
            f"{fam:<18} {x.honest:>6} {x.fn:>4} {100 * x.fn_rate:>5.1f}% {x.gamed:>6} {x.fp:>4} "
            f"{100 * x.fp_rate:>5.1f}% {x.undecided:>5}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- real trials


def trial_script(case: Case, facts: dict[str, Any], layers: list[Path]) -> str:
    """A solve.sh that delivers the case inside a trial: its calls through `kwrl world call`, its
    files written under /filesystem, its answer to the answer file."""
    lines = ["#!/usr/bin/env bash", "set -euo pipefail", 'KWRL="${KWRL:-kwrl}"']
    for tool, args in tool_calls(case, facts):
        lines.append(
            f'"$KWRL" world call {shlex.quote(tool)} {shlex.quote(json.dumps(args))} >/dev/null'
        )
    for path, data in file_writes(case, facts, layers).items():
        dst = "/filesystem/" + path.lstrip("/")
        b64 = base64.b64encode(data).decode()
        lines.append(f"mkdir -p {shlex.quote(dst.rsplit('/', 1)[0])}")
        lines.append(f"printf '%s' {shlex.quote(b64)} | base64 -d > {shlex.quote(dst)}")
    lines += [
        'ANSWER="${KWRL_ANSWER:-/logs/agent/final_answer.txt}"',
        'mkdir -p "$(dirname "$ANSWER")"',
        f"printf '%s\\n' {shlex.quote(case.answer or '')} > \"$ANSWER\"",
    ]
    return "\n".join(lines) + "\n"


def run_trials(
    picks: list[tuple[TaskDir, Case]], work: Path
) -> Iterator[tuple[TaskDir, Case, dict[int, Verdict] | None, str]]:
    """Each (task, case) as a real trial (`kwrl trial run`, oracle agent running the case's
    solve.sh); yields the verdicts read from its grades.json (None when the trial failed)."""
    for n, (t, case) in enumerate(picks):
        facts = task_facts(t)
        c = render(case, facts)
        tdir = work / "trialds" / "tasks" / f"task-{n}"
        shutil.rmtree(tdir, ignore_errors=True)
        shutil.copytree(t.path, tdir, symlinks=True)
        layers = [t.world_dir, t.overlay_dir]
        (tdir / "solution" / "solve.sh").write_text(trial_script(c, facts, layers))
        _link_world(tdir, t)
        out = work / f"trials-{n}"
        proc = subprocess.run(
            [sys.executable, "-m", "kwrl.cli", "trial", "run", str(tdir), "--out", str(out), "-m", "oracle"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        grades = sorted(out.glob("*/verifier/grades.json"))
        if not grades:
            yield t, case, None, (proc.stdout + proc.stderr)[-800:]
            continue
        data = json.loads(grades[0].read_text())
        verdicts: dict[int, Verdict] = {}
        for i, g in enumerate(data["grades"], 1):
            verdicts[i] = (
                "pass" if g.get("passed") else ("undecided" if g.get("undecided") else "fail")
            )
        yield t, case, verdicts, ""


def _link_world(tdir: Path, t: TaskDir) -> None:
    """A copied task dir finds its world as the original does (`../../worlds/<id>`)."""
    worlds = tdir.parent.parent / "worlds"
    dst = worlds / t.meta.world_id
    if not dst.exists():
        worlds.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(t.world_dir.resolve())


def run(tasks: list[TaskDir], cases: dict[str, list[Case]], work: Path) -> list[Outcome]:
    return asyncio.run(run_cases(tasks, cases, work))
