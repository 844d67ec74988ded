"""The judge's prompt: one criterion with the task, its scope and the evidence, as (system, user).

`build_prompt` fills `judge_prompt.txt` (Archipelago's grading rules, in kwrl's own words) with the
task, what the criterion is graded on (`Scope`), the final answer and the selected artifacts, each
cut, header and path included, to a share of `max_artifact_chars` (so the prompt's size does not
grow with the number of artifacts the agent made). Every judge transport sends the same two
messages.

Everything the agent wrote (its final answer, its files' content, diffs and names) reaches the judge
as data inside the agent-output block, and a policy trained on the judge's verdicts is rewarded for
any text there that sways it. So that text cannot close or open any block of the prompt, nor start
a chat turn in the judge's tokenizer (`defuse`): it is NFKC-normalized with its format characters
dropped, then every `<` and `>` in it, however spelled (full-width, small-form, look-alike, HTML
entity, escape), becomes `‹` or `›`, and bracketed control tokens (`[INST]`) lose their brackets;
the tags (`PROMPT_TAGS`, the evidence's `<diff>` and `<updated_content>` among them) are written by
`render_artifact` and the template alone. The block's own name, `AGENT_OUTPUT_<code>`, is a hash of
the prompt's contents (`boundary`): stable for the verdict cache, unknowable to the agent. A path
cannot end its attribute (quotes escaped), and the system prompt tells the judge that nothing in
the agent's block is an instruction (rule 8 of judge_prompt.txt).

`JudgeInputs` keeps what `build_prompt` needs for one criterion, so the grader can rebuild its
prompt when the judge cannot take it: with a smaller `max_artifact_chars` (the prompt overflowed
the judge's context), or with the agent's output withheld (`WITHHELD` in its place: the probe that
tells whether the agent's text or the task's own tripped the judge's content filter).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from string import Template

from kwrl.grading.evidence import Artifact, Scope

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


PROMPT_TAGS = (
    "AGENT_OUTPUT", "ARTIFACT", "FINAL_ANSWER", "TASK", "EVALUATION_SCOPE", "CRITERION", "diff",
    "updated_content",
)  # fmt: skip
"""The tags of judge_prompt.txt, `build_prompt` and `render_artifact` (the evidence's `<diff>` and
`<updated_content>` included): only kwrl writes them; in agent text no `<` or `>` survives."""

OPEN, CLOSE = "\u2039", "\u203a"
"""What every `<` and `>` of agent text becomes (`‹`, `›`)."""
_ANGLES = str.maketrans(
    {c: OPEN for c in "<\u02c2\u1438\u27e8\u3008"} | {c: CLOSE for c in ">\u02c3\u1433\u27e9\u3009"}
)
"""`<` and `>` and the look-alikes NFKC does not fold into them (modifier-letter arrowheads,
Canadian syllabics PA/PO, mathematical and CJK angle brackets; full-width and small-form ones fold)."""
_ENTITY_RE = re.compile(
    r"&(?:(lt)|gt);?|&#(?:0*(60)|0*62)(?!\d);?|&#x(?:0*(3c)|0*3e)(?![0-9a-f]);?"
    r"|\\(?:u(003c)|u003e|x(3c)|x3e)",
    re.IGNORECASE,
)
"""`<` and `>` spelled as HTML entities or as JSON / Python escapes."""
_CONTROL_RE = re.compile(
    r"\[(/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT|THINK|IMG"
    r"|IMG_BREAK|IMG_END|PREFIX|MIDDLE|SUFFIX|gMASK|sMASK|MASK))\]"
)
"""Chat-template control tokens in square brackets (Mistral's `[INST]`, GLM's `[gMASK]`); every
other family's special tokens (`<|im_end|>`, `<end_of_turn>`, `</s>`, DeepSeek's `<｜...｜>`) are
written with angle brackets and go with them."""


def _entity(m: re.Match[str]) -> str:
    return OPEN if any(m.groups()) else CLOSE


def defuse(text: str) -> str:
    """Agent-written `text` as the judge sees it: NFKC-normalized (full-width and small-form
    brackets fold to ASCII), format characters (Unicode category Cf: zero-width space, soft
    hyphen, bidi marks) dropped, then every `<` and `>`, spelled as a character, a look-alike
    (`_ANGLES`), an HTML entity or an escape, becomes `‹` or `›`, and bracketed control tokens
    (`_CONTROL_RE`) lose their brackets to `⟦ ⟧`. The result holds no `<` or `>`, so agent text can
    neither close nor open any tag of the prompt (nor the evidence's own), in any case or spelling,
    and no chat-template special token of any judge's tokenizer."""
    text = unicodedata.normalize("NFKC", text)
    fmt = [c for c in set(text) if unicodedata.category(c) == "Cf"]
    if fmt:
        text = text.translate(dict.fromkeys(map(ord, fmt)))
    text = _ENTITY_RE.sub(_entity, text).translate(_ANGLES)
    return _CONTROL_RE.sub("\u27e6\\1\u27e7", text)


_SLACK = 64
"""Characters past a cut that `shown` defuses, so that a text that shrinks when defused (entities,
format characters) still fills its share. What is shown never depends on the slack for its
safety: defusing is local and leaves no `<` or `>` whatever the cut."""


def shown(text: str, budget: int) -> tuple[str, bool]:
    """(`text` defused and cut to `budget` characters, whether it was cut); the work is bounded by
    the budget, not the text, however often a prompt is rebuilt."""
    head = defuse(text[: budget + _SLACK])
    return head[:budget], len(text) > budget + _SLACK or len(head) > budget


MAX_PATH_CHARS = 240
"""Characters of an artifact's path shown to the judge (the agent names its files; a path can be
thousands of characters long, and each artifact shows one)."""


def render_artifact(a: Artifact, budget: int) -> str:
    """One artifact in at most about `budget` characters, its header included: a modified one's
    diff and updated content in `<diff>` and `<updated_content>`, the diff first, the content
    keeping at least half of what it needs."""
    path, _ = shown(a.path, MAX_PATH_CHARS)
    path = path.replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")
    attrs = f'id="{a.id}" kind="{a.kind}" change="{a.change}" path="{path}"'
    budget = max(budget - len(attrs) - 40, 0)  # the tags and the marker
    if a.diff is None:
        body, cut = shown(a.content, budget)
    else:
        budget = max(budget - 50, 0)  # the diff's and the content's tags
        diff, cut_diff = shown(a.diff, budget - min(len(a.content), budget // 2))
        content, cut = shown(a.content, budget - len(diff))
        cut = cut or cut_diff
        body = f"<diff>\n{diff}\n</diff>\n<updated_content>\n{content}\n</updated_content>"
    if cut:
        body += "\n[truncated]"
        attrs += ' truncated="true"'
    return f"<ARTIFACT {attrs}>\n{body}\n</ARTIFACT>"


def _agent_output(answer: str, scope: Scope, artifacts: list[Artifact], max_chars: int) -> str:
    """The agent-output block's content: the answer and the artifacts the scope shows."""
    parts: list[str] = []
    if scope in ("answer", "both"):
        text, cut = shown(answer.strip(), max_chars // 2)
        if cut:
            text += f"\n[truncated: {len(answer.strip()) - len(text):,} more characters]"
        text = text or "(the agent gave no final answer)"
        parts.append(f"<FINAL_ANSWER>\n{text}\n</FINAL_ANSWER>")
    if scope in ("files", "both"):
        if artifacts:
            budget = max_chars // len(artifacts)
            parts.extend(render_artifact(a, budget) for a in artifacts)
        else:
            parts.append("(the agent made no changes to files, mail, calendar or chat)")
    return "\n\n".join(parts)


def boundary(*parts: str) -> str:
    """`AGENT_OUTPUT_<12 hex>`: the name of the block that holds the agent's output in one prompt,
    a hash of the prompt's `parts`. The same evidence gives the same prompt (the verdict cache's
    key), and the agent cannot write the name: its text is hashed into it."""
    digest = hashlib.sha256("\0".join(parts).encode(errors="replace")).hexdigest()
    return "AGENT_OUTPUT_" + digest[:12]


WITHHELD = "(withheld: the agent's output is not shown in this request)"
"""The whole of the agent-output block in a probe (`build_prompt(withheld=True)`)."""


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
    task = task.strip() or "(task text not available)"
    filled = user.safe_substitute(
        task=task,
        scope=SCOPE_TEXT[scope],
        output=output,
        criterion=criterion.strip(),
        boundary=boundary(task, criterion, output),
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
