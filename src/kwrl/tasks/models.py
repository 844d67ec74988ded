"""pydantic models of every on-disk format kwrl reads or writes (docs/contracts.md).

- APEX-Agents HF layout: `ApexTask` (tasks_and_rubrics.json rows), `ApexWorld`
  (world_descriptions.json rows).
- Training task dirs: `ArchipelagoMeta` (archipelago.json), `Verifier` (verifiers.json entries),
  `GoldenResponse` (golden_responses.json entries); harbor's own `TaskConfig` validates task.toml
  (see `kwrl.tasks.taskdir`).
- `EXPECTED_FILE_TYPES`: Archipelago's expected_output -> expected_file_type labels, kept verbatim
  because the grader filters produced files by the extensions written in the label.
- kwrl's extension: an optional machine check per criterion (`verifier_values.kwrl_check`),
  a discriminated union on `kind`. APEX criteria have none; generated tasks have one wherever a
  sound check exists. The grader runs it instead of the LLM judge.

Models forbid unknown fields so a typo is an error that names the field, not a silent default.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Domain = Literal["Investment Banking", "Law", "Management Consulting"]
DOMAINS: tuple[str, ...] = ("Investment Banking", "Law", "Management Consulting")

ExpectedOutput = Literal[
    "message_in_console",
    "make_new_doc",
    "edit_existing_doc",
    "make_new_sheet",
    "edit_existing_sheet",
    "make_new_slide_deck",
    "edit_existing_slide_deck",
]
EXPECTED_OUTPUTS: tuple[str, ...] = ExpectedOutput.__args__  # type: ignore[attr-defined]

TASK_ID_RE = re.compile(r"^task_[0-9a-f]{32}$")
WORLD_ID_RE = re.compile(r"^world_[0-9a-f]{32}$")

# Archipelago's grader (grading/runner/evals/output_llm) derives a criterion's expected file type
# from the task's expected_output with exactly these labels; the grader keys its extension filter
# on the label, so they are kept verbatim. A null expected_output means "all output" (no filter).
EXPECTED_FILE_TYPES: dict[str, str] = {
    "message_in_console": "Final Answer Only (No Files)",
    "make_new_doc": "Word Documents (.docx, .doc, .odt)",
    "edit_existing_doc": "Word Documents (.docx, .doc, .odt)",
    "make_new_sheet": "Spreadsheets (.xlsx, .xls, .xlsm, .ods)",
    "edit_existing_sheet": "Spreadsheets (.xlsx, .xls, .xlsm, .ods)",
    "make_new_slide_deck": "Presentations (.pptx, .ppt, .odp)",
    "edit_existing_slide_deck": "Presentations (.pptx, .ppt, .odp)",
}
ALL_OUTPUT_FILE_TYPE = "All output (modified files and final message in console)"


def expected_file_type_for(expected_output: str | None) -> str | None:
    """The `verifier_values.expected_file_type` Archipelago uses for a task's expected_output."""
    if expected_output is None:
        return None
    return EXPECTED_FILE_TYPES[expected_output]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


# --------------------------------------------------------------------------- APEX HF layout


class ApexRubricItem(_Strict):
    verifier_id: str
    criteria: str


class ApexTask(_Strict):
    """One row of tasks_and_rubrics.json."""

    task_id: str
    task_name: str
    domain: Domain
    world_id: str
    prompt: str
    rubric: list[ApexRubricItem] = Field(min_length=1)
    expected_output: ExpectedOutput | None = None
    gold_response: str | None = None
    gold_response_type: Literal["text", "file"] | None = None
    task_input_files: str | list[str] | None = None


class ApexApp(_Strict):
    service_id: str
    service_name: str


class ApexWorld(_Strict):
    """One row of world_descriptions.json."""

    world_id: str
    world_name: str
    world_description: str
    domain: Domain
    apps: list[ApexApp] = Field(default_factory=list)


# --------------------------------------------------------------------------- machine checks


Source = Literal["answer", "files", "answer_or_files"]


class NumberCheck(_Strict):
    """A number in the answer (or in the produced files' text) equals `value` within tolerance."""

    kind: Literal["number"] = "number"
    value: float
    rel_tol: float = 0.005
    abs_tol: float = 0.0
    """In the units of `value` (0.05 for a percentage stated to one decimal)."""
    source: Source = "answer"
    scale: float | None = Field(default=None, gt=0)
    """What one unit of `value` is in plain numbers (1e6 for $ millions, 0.01 for a percentage),
    so a text may state the value at any scale: "$283m", "283.0", "$283,000,000", "$0.283bn" for
    283 at 1e6; "$283k" is not. None: the value has no unit, and a magnitude word is read either way."""


class _Rivals(_Strict):
    """Other answers to the same question: naming many of them is hedging, not answering."""

    rivals: list[str] = Field(default_factory=list)
    """Wrong answers of the same kind (other people, periods, clause numbers); matched as words."""
    rival_pattern: str | None = None
    """A regex for answers of the same kind (e.g. any date); its matches that are not the
    expected answer count as rivals."""
    max_rivals: int | None = Field(default=None, ge=0)
    """The most distinct rivals the text may name and still pass (a list of candidates is not an
    answer; a rival the task itself names, or one ruled out with "not", does not count). None: 0
    when the check reads only the final answer, 1 elsewhere (a memo or mail may mention one)."""


class RegexCheck(_Rivals):
    """`pattern` (Python re, searched) matches the answer or produced files' text."""

    kind: Literal["regex"] = "regex"
    pattern: str
    ignore_case: bool = True
    source: Source = "answer"


class ContainsCheck(_Rivals):
    """Every string in `all_of` appears (case-insensitive) and none in `none_of`."""

    kind: Literal["contains"] = "contains"
    all_of: list[str] = Field(default_factory=list)
    none_of: list[str] = Field(default_factory=list)
    source: Source = "answer"


class FileExistsCheck(_Strict):
    """A file matching the glob `path` (relative to /filesystem) exists in the final snapshot."""

    kind: Literal["file_exists"] = "file_exists"
    path: str


class XlsxCellCheck(_Strict):
    """Cell `cell` of sheet `sheet` in the workbook at `path` holds `value` (number within tolerance)."""

    kind: Literal["xlsx_cell"] = "xlsx_cell"
    path: str
    sheet: str | None = None
    cell: str
    value: float | str
    rel_tol: float = 0.005
    decimals: int | None = Field(default=None, ge=0)
    """For a number: the decimals the instruction asks for; the cell must be the value at that
    precision (as `SlotCheck.decimals`)."""


class DocContainsCheck(_Strict):
    """The text of the docx/pptx/pdf/xlsx at glob `path` contains every string in `all_of`."""

    kind: Literal["doc_contains"] = "doc_contains"
    path: str
    all_of: list[str] = Field(min_length=1)
    first: bool = False
    """The trial's text in the file opens with `all_of[0]` (a marker the new paragraphs start with)."""


class MailSentCheck(_Rivals):
    """A mail sent during the trial went to `to` and its subject/body contain the given strings
    (rivals are looked for in the body)."""

    kind: Literal["mail_sent"] = "mail_sent"
    to: str
    subject_contains: list[str] = Field(default_factory=list)
    body_contains: list[str] = Field(default_factory=list)


class EventExistsCheck(_Strict):
    """A calendar event whose summary contains `title_contains` exists (optionally on `date`, with `attendee`)."""

    kind: Literal["event_exists"] = "event_exists"
    title_contains: str
    date: str | None = None
    attendee: str | None = None


class ChatPostedCheck(_Rivals):
    """A chat message posted during the trial in `channel` contains every string in `all_of`."""

    kind: Literal["chat_posted"] = "chat_posted"
    channel: str
    all_of: list[str] = Field(min_length=1)


class SlotCheck(_Strict):
    """A value read from its slot (docs/contracts.md, "The answer contract of generated tasks"):
    the slot line `<label>: <value>` in the final answer, the mail to `to`, the posts of `channel`
    or the named file `path`; the value one of `kind`, equal to `value`."""

    kind: Literal["slot"] = "slot"
    label: str
    """The slot line's label as the instruction names it ('Revenue FY2025', 'Net debt ($m)')."""
    others: list[str] = Field(default_factory=list)
    """The task's other labels in the same place: a line carrying one of them too fails."""
    type: Literal["number", "date", "time", "text"]
    value: float | str | list[str]
    """number: the figure (in the unit the task asks for); date: ISO; time: 'HH:MM'; text: the
    items that must all be there (a name; a metric and a period; clause numbers)."""
    rel_tol: float = 0.005
    abs_tol: float = 0.0
    scale: float | None = Field(default=None, gt=0)
    """As `NumberCheck.scale`: the value may be restated at any scale ("$121.9m" = "$121,900,000")."""
    decimals: int | None = Field(default=None, ge=0)
    """For a number: the decimals the instruction asks for ("one decimal" -> 1). The figure must
    be the value at that precision: shown more coarsely, only zeros may be dropped (`$4m` for 4.0;
    not `13%` for 12.95%); shown as finely or finer, it is within half the asked last digit
    (`12.95%` or `12.953%`, not `13.00%`), though the tolerance is wider; None: the instruction
    names none and the tolerance decides."""
    rivals: list[str] = Field(default_factory=list)
    """Known wrong values of the kind (a stale figure, other people, periods, compliant clauses):
    in the slot they fail it; hedged or affirmed in the prose, the check is undecided."""
    rival_pattern: str | None = None
    """A regex for values of the kind (an identifier's shape): its matches in the slot that are
    not the value fail it."""
    day: str | None = None
    """For a time: the day (ISO) it falls on. A weekday or date the slot names beside the time must
    be this day's; without it, a weekday or date beside a time is left to the judge."""
    wrong_value: bool = False
    """The slot names a wrong figure (what a stale copy shows): a correction word in it or about
    it is expected, not a negation."""
    place: Literal["answer", "mail", "chat", "file"] = "answer"
    to: str | None = None
    channel: str | None = None
    path: str | None = None
    """The output file (relative to /filesystem) for `place = "file"`; nothing else is read."""


MachineCheck = Annotated[
    NumberCheck
    | RegexCheck
    | ContainsCheck
    | FileExistsCheck
    | XlsxCellCheck
    | DocContainsCheck
    | MailSentCheck
    | EventExistsCheck
    | ChatPostedCheck
    | SlotCheck,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- verifiers.json


class VerifierValues(_Strict):
    criteria: str
    is_primary_objective: bool = False
    expected_file_type: str | None = None
    expected_output_files: list[str] | None = None
    artifacts_to_reference: list[str] | None = None
    negative_criteria: str | None = None
    kwrl_check: MachineCheck | None = None
    """kwrl extension: a machine check the grader runs instead of the LLM judge."""


class Verifier(_Strict):
    """One entry of verifiers.json (Archipelago's grading input)."""

    verifier_id: str
    verifier_version: int = 1
    world_id: str | None = None
    task_id: str | None = None
    eval_config_id: str = "ec_output_llm"
    verifier_values: VerifierValues
    verifier_index: int = 0
    verifier_dependencies: list[str] | None = None


# --------------------------------------------------------------------------- golden_responses.json


class GoldenResponse(_Strict):
    """One entry of tests/golden_responses.json: the reference answer of a task (never shown to the agent)."""

    golden_text_response: str | None = None
    """The reference final answer, when the gold response is text."""
    golden_file_responses: list[str] | None = None
    """Reference output files (names or descriptions), when the gold response is a file."""
    golden_files_path: str | None = None
    """Optional dir (relative to the task dir) holding reference output files."""


# --------------------------------------------------------------------------- archipelago.json


class ArchipelagoMeta(_Strict):
    """archipelago.json of a training task dir (RECIPE), plus kwrl's optional fields."""

    task_id: str
    task_name: str
    task_slug: str
    world_id: str
    world_short_name: str = ""
    ecr_image: str | None = None
    required_env_keys: list[str] = Field(default_factory=list)
    needs_snapshot: bool = True
    domain: Domain | None = None
    """kwrl: the task's domain (APEX domains)."""
    expected_output: ExpectedOutput | None = None
    """kwrl: what the task asks the agent to produce."""
    difficulty: Literal["easy", "medium", "hard"] | None = None
    """kwrl: difficulty tier of generated tasks."""
    world_dir: str | None = None
    """kwrl: path of the world seed dir, relative to the task dir (default ../../worlds/<world_id>)."""

    @field_validator("task_slug")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not v or "/" in v or v in (".", ".."):
            raise ValueError("task_slug must be a single path component, e.g. 'ib-dcf-lookup-001'")
        return v
