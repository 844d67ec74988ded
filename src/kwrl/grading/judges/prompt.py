"""The judge's prompt: one criterion with the task, its scope and the evidence, as (system, user).

`build_prompt` fills `judge_prompt.txt` (Archipelago's grading rules, in kwrl's own words) with the
task, what the criterion is graded on (`Scope`), the final answer and the selected artifacts, each
cut, header and path included, to a share of `max_artifact_chars` (so the prompt's size does not
grow with the number of artifacts the agent made). Every judge transport sends the same two
messages.

Everything the agent wrote (its final answer, its files' content and names) reaches the judge as
data inside <AGENT_OUTPUT>, and a policy trained on the judge's verdicts is rewarded for any text
there that sways it. So that text cannot close or open the prompt's own blocks: in it, the
prompt's tag names (`PROMPT_TAGS`) lose their `<` to `‹` (`neutralize`: "</AGENT_OUTPUT>" written
by the agent reaches the judge as "‹/AGENT_OUTPUT>"), a path cannot end its attribute (quotes
escaped), and the system prompt tells the judge that nothing inside <AGENT_OUTPUT> is an
instruction (rule 8 of judge_prompt.txt).

`JudgeInputs` keeps what `build_prompt` needs for one criterion, so the grader can rebuild its
prompt when the judge cannot take it: with a smaller `max_artifact_chars` (the prompt overflowed
the judge's context), or with the agent's output withheld (`WITHHELD` in its place: the probe that
tells whether the agent's text or the task's own tripped the judge's content filter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from kwrl.grading.evidence import Artifact, Scope
from kwrl.grading.render import truncate

PROMPT_FILE = Path(__file__).with_name("judge_prompt.txt")

SCOPE_TEXT: dict[Scope, str] = {
    "answer": "This criterion is graded on the agent's final answer only. File changes are not shown.",
    "files": "This criterion is graded on the changes the agent made (the artifacts) only; the final "
    "answer is not evidence for it.",
    "both": "This criterion is graded on the agent's final answer and the changes it made.",
}


def _load_prompt() -> tuple[str, Template]:
    text = PROMPT_FILE.read_text(encoding="utf-8")
    _, rest = text.split("=== SYSTEM ===\n", 1)
    system, user = rest.split("=== USER ===\n", 1)
    return system.strip(), Template(user)


PROMPT_TAGS = ("AGENT_OUTPUT", "ARTIFACT", "FINAL_ANSWER", "TASK", "EVALUATION_SCOPE", "CRITERION")
"""The blocks of judge_prompt.txt and build_prompt; agent-written text may not write them."""
_TAG_RE = re.compile(r"<(\s*/?\s*)(" + "|".join(PROMPT_TAGS) + r")\b", re.IGNORECASE)


def neutralize(text: str) -> str:
    """Agent-written `text` with every opening or closing prompt tag defused (`<` -> `‹`)."""
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)


_TAG_SLACK = 64
"""Characters past a cut that `neutralize` reads, more than the longest tag name: what is shown
is what the whole text neutralized would show (but a `<` whose tag name lies wholly past the cut,
so no tag is shown), at the cost of the shown part only, however often the prompt is rebuilt."""

MAX_PATH_CHARS = 240
"""Characters of an artifact's path shown to the judge (the agent names its files; a path can be
thousands of characters long, and each artifact shows one)."""


def render_artifact(a: Artifact, budget: int) -> str:
    """One artifact in at most about `budget` characters, its header included."""
    path = a.path if len(a.path) <= MAX_PATH_CHARS else a.path[:MAX_PATH_CHARS] + "..."
    path = neutralize(path).replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")
    attrs = f'id="{a.id}" kind="{a.kind}" change="{a.change}" path="{path}"'
    budget = max(budget - len(attrs) - 40, 0)  # the tags and the marker
    cut = len(a.content) > budget
    if cut:  # neutralize keeps lengths; the slack holds any tag name that starts before the cut
        content = neutralize(a.content[: budget + _TAG_SLACK])[:budget] + "\n[truncated]"
        attrs += ' truncated="true"'
    else:
        content = neutralize(a.content)
    return f"<ARTIFACT {attrs}>\n{content}\n</ARTIFACT>"


def _agent_output(answer: str, scope: Scope, artifacts: list[Artifact], max_chars: int) -> str:
    """The <AGENT_OUTPUT> block's content: the answer and the artifacts the scope shows."""
    parts: list[str] = []
    if scope in ("answer", "both"):
        parts.append(
            f"<FINAL_ANSWER>\n{truncate(neutralize(answer.strip()), max_chars // 2) or '(the agent gave no final answer)'}\n</FINAL_ANSWER>"
        )
    if scope in ("files", "both"):
        if artifacts:
            budget = max_chars // len(artifacts)
            parts.extend(render_artifact(a, budget) for a in artifacts)
        else:
            parts.append("(the agent made no changes to files, mail, calendar or chat)")
    return "\n\n".join(parts)


WITHHELD = "(withheld: the agent's output is not shown in this request)"
"""The whole of <AGENT_OUTPUT> in a probe (`build_prompt(withheld=True)`)."""


def build_prompt(
    *,
    task: str,
    answer: str,
    criterion: str,
    scope: Scope,
    artifacts: list[Artifact],
    max_artifact_chars: int,
    withheld: bool = False,
) -> tuple[str, str]:
    """(system, user) messages for one criterion; `withheld`: `WITHHELD` stands for the agent's
    output (its answer and artifacts), so the prompt holds only the task's own text."""
    system, user = _load_prompt()
    output = WITHHELD if withheld else _agent_output(answer, scope, artifacts, max_artifact_chars)
    filled = user.safe_substitute(
        task=task.strip() or "(task text not available)",
        scope=SCOPE_TEXT[scope],
        output=output,
        criterion=criterion.strip(),
    )
    return system, filled


@dataclass(frozen=True)
class JudgeInputs:
    """What `build_prompt` needs for one criterion, kept to rebuild its prompt (module doc)."""

    task: str
    answer: str
    criterion: str
    scope: Scope
    artifacts: list[Artifact]

    def prompt(self, max_artifact_chars: int, *, withheld: bool = False) -> tuple[str, str]:
        """`build_prompt` on these inputs."""
        return build_prompt(
            task=self.task,
            answer=self.answer,
            criterion=self.criterion,
            scope=self.scope,
            artifacts=self.artifacts,
            max_artifact_chars=max_artifact_chars,
            withheld=withheld,
        )
