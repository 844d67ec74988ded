"""Gold solutions: the tool calls that reach full marks, as JSON and as a replayable solve.sh.

solve.sh runs each call through the world gateway with `kwrl world call TOOL 'JSON'` (the
gateway URL comes from env `KWRL_GATEWAY`, set in every trial exec) and writes the gold final
answer to /logs/agent/final_answer.txt, so harbor's oracle agent replays a generated task.

The calls are Archipelago's tools with Archipelago's arguments, written as the agent's model
writes them: a tool taking one `input`/`request` envelope gets the envelope's fields flat, and
`kwrl world call` (like the agent) re-wraps them, so the SFT warm start's gold trajectories
(`kwrl.train.local.sft`) show the model exactly the calls it should make.
"""

from __future__ import annotations

import json
import shlex

from kwrl.synth.families.base import TaskDraft

ANSWER_PATH = "/logs/agent/final_answer.txt"


def gold_calls(d: TaskDraft) -> list[dict[str, object]]:
    return [{"tool": c.tool, "arguments": c.args} for c in d.calls]


def gold_calls_json(d: TaskDraft) -> bytes:
    return (json.dumps(gold_calls(d), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def solve_sh(d: TaskDraft) -> str:
    lines = [
        "#!/usr/bin/env bash",
        "# Gold solution (generated): replay the gold tool calls through the world gateway,",
        "# then write the gold final answer. Needs env KWRL_GATEWAY (set inside every trial);",
        "# env KWRL_ANSWER overrides where the answer goes (default /logs/agent/final_answer.txt).",
        "set -euo pipefail",
        'KWRL="${KWRL:-kwrl}"',
    ]
    for c in d.calls:
        args = json.dumps(c.args, sort_keys=True, ensure_ascii=False)
        lines.append(f'"$KWRL" world call {shlex.quote(c.tool)} {shlex.quote(args)} >/dev/null')
    lines += [
        f'ANSWER="${{KWRL_ANSWER:-{ANSWER_PATH}}}"',
        'mkdir -p "$(dirname "$ANSWER")"',
        f"printf '%s\\n' {shlex.quote(d.answer)} > \"$ANSWER\"",
    ]
    return "\n".join(lines) + "\n"
