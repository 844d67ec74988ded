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
"""

from __future__ import annotations

import re
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


MAX_PATH_CHARS = 240
"""Characters of an artifact's path shown to the judge (the agent names its files; a path can be
thousands of characters long, and each artifact shows one)."""


def render_artifact(a: Artifact, budget: int) -> str:
    """One artifact in at most about `budget` characters, its header included."""
    path = a.path if len(a.path) <= MAX_PATH_CHARS else a.path[:MAX_PATH_CHARS] + "..."
    path = neutralize(path).replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")
    attrs = f'id="{a.id}" kind="{a.kind}" change="{a.change}" path="{path}"'
    budget = max(budget - len(attrs) - 40, 0)  # the tags and the marker
    content = neutralize(a.content)
    cut = len(content) > budget
    if cut:
        content = content[:budget] + "\n[truncated]"
        attrs += ' truncated="true"'
    return f"<ARTIFACT {attrs}>\n{content}\n</ARTIFACT>"


def build_prompt(
    *,
    task: str,
    answer: str,
    criterion: str,
    scope: Scope,
    artifacts: list[Artifact],
    max_artifact_chars: int,
) -> tuple[str, str]:
    """(system, user) messages for one criterion."""
    system, user = _load_prompt()
    parts: list[str] = []
    if scope in ("answer", "both"):
        parts.append(
            f"<FINAL_ANSWER>\n{truncate(neutralize(answer.strip()), max_artifact_chars // 2) or '(the agent gave no final answer)'}\n</FINAL_ANSWER>"
        )
    if scope in ("files", "both"):
        if artifacts:
            budget = max_artifact_chars // len(artifacts)
            parts.extend(render_artifact(a, budget) for a in artifacts)
        else:
            parts.append("(the agent made no changes to files, mail, calendar or chat)")
    filled = user.safe_substitute(
        task=task.strip() or "(task text not available)",
        scope=SCOPE_TEXT[scope],
        output="\n\n".join(parts),
        criterion=criterion.strip(),
    )
    return system, filled
