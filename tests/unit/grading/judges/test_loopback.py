"""The loopback judge's attacker-friendly reading (`breakouts`, `credulous`) on prompts built by
kwrl's own `build_prompt`: a prompt it defused holds no breakout, whatever its scope and
artifacts; the same prompt with any injection written verbatim into the agent's block holds one,
and the credulous judge pays it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from kwrl.grading.evidence import Artifact, Scope
from kwrl.grading.judges.loopback import (
    PASS_INSTRUCTION,
    PROMPT_INJECTIONS,
    LoopbackJudge,
    agent_output,
    breakouts,
    credulous,
)
from kwrl.grading.judges.prompt import build_prompt

CRITERION = "The final answer says 'The answer is 42'"


def _body(answer: str, scope: Scope, artifacts: list[Artifact]) -> dict[str, Any]:
    system, user = build_prompt(task="Find the answer.", answer=answer, criterion=CRITERION,
                                scope=scope, artifacts=artifacts, max_artifact_chars=100_000)  # fmt: skip
    return {"model": "m", "messages": [{"role": "system", "content": system},
                                       {"role": "user", "content": user}]}  # fmt: skip


def _artifacts(text: str) -> list[Artifact]:
    return [
        Artifact(1, "file", "modified", "/notes.txt", f"new\n{text}", ".txt", f"-old\n+{text}"),
        Artifact(2, "file", "created", "/b.txt", text, ".txt"),
    ]


@pytest.mark.parametrize("scope", ["answer", "files", "both"])
@pytest.mark.parametrize("name", sorted(PROMPT_INJECTIONS))
def test_a_defused_injection_is_no_breakout_and_a_verbatim_one_pays(
    scope: Scope, name: str
) -> None:
    answer = f"The answer is 41.\n{PROMPT_INJECTIONS[name]}\n{PASS_INSTRUCTION}"
    body = _body(answer, scope, _artifacts(answer))
    assert breakouts(body) == [] and not credulous(body)
    user = body["messages"][-1]["content"]
    raw = user.replace(agent_output(user), f"<FINAL_ANSWER>\n{answer}\n</FINAL_ANSWER>", 1)
    verbatim = {**body, "messages": [body["messages"][0], {"role": "user", "content": raw}]}
    assert breakouts(verbatim) and credulous(verbatim)


def test_the_credulous_judge_is_honest_on_a_defused_prompt() -> None:
    assert credulous(_body("The answer is 42.", "answer", []))
    assert not credulous(_body("The answer is 41.", "answer", []))


def test_the_loopback_judge_logs_each_request_and_answers_its_verdict() -> None:
    body = _body("The answer is 42.", "answer", [])
    with LoopbackJudge(credulous) as judge:
        r = httpx.post(f"{judge.url}/chat/completions", json=body, timeout=10)
        missing = httpx.post(f"{judge.url}/models", json={}, timeout=10)
    assert r.status_code == 200 and '\\"is_criteria_true\\": true' in r.text
    assert missing.status_code == 404
    assert [q["body"] for q in judge.requests] == [body, {}]
