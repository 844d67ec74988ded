"""The judge's HTTP endpoint, faked: a real OpenAI-compatible chat-completions server on loopback.

`FakeJudge` is the one faked seam (AGENTS.md): `kwrl.grading.judges.loopback.LoopbackJudge` (a
stdlib ThreadingHTTPServer on 127.0.0.1 that records every request and answers a verdict decided
by `decide`, default: the criterion's quoted expectation appears in the prompt's agent output)
with scripted faults played first (an HTTP status such as `429`, `500`, `401` with a plain error
body; `"malformed"`, `"wrong_schema"`, `"hang"`; a provider's own error answer by name,
`ERROR_FAULTS`; `"filtered"`, a 200 whose `finish_reason` is `content_filter` and whose content is
empty). Three standing modes play a real model's limits on every request without a script:
`context_chars` (a prompt longer than that overflows: vLLM's 400), `refuse_marker` (a prompt
holding that text is refused: Azure's content-filter 400) and `slow_chars` (a prompt longer than
that hangs: a judge slow on long prompts). `PROMPT_INJECTIONS` (from the loopback module) are the
texts an agent writes to break out of the judge's prompt, for the tests that check each arrives
defused. tests/conftest.py serves one per test as the `judge` fixture; this module sits beside it
so any test imports it by name (`from fake_judge import FakeJudge`).
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from kwrl.grading.judges.loopback import (
    PROMPT_INJECTIONS,
    LoopbackJudge,
    agent_output,
    completion,
    criterion_of,
    prompt_chars,
    quoted_in_output,
    read_leniently,
    undefused,
)

__all__ = [
    "ERROR_FAULTS",
    "PROMPT_INJECTIONS",
    "FakeJudge",
    "agent_output",
    "criterion_of",
    "default_decide",
    "read_leniently",
    "undefused",
]

Fault = int | str

_VLLM_OVERFLOW = (
    "This model's maximum context length is 32768 tokens. However, you requested 41210 tokens "
    "(37114 in the messages, 4096 in the completion). Please reduce the length of the messages "
    "or completion."
)
_AZURE_FILTER = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry."
)
ERROR_FAULTS: dict[str, tuple[int, dict[str, Any]]] = {
    # vLLM's OpenAI server (recent releases nest the error; the code is the HTTP status)
    "overflow": (400, {"error": {"message": _VLLM_OVERFLOW, "type": "BadRequestError",
                                 "param": None, "code": 400}}),
    # older vLLM: a flat body, and its other wording ("... maximum model length ...")
    "overflow_flat": (400, {"object": "error", "type": "BadRequestError", "param": None,
                            "code": 400, "message": "The decoder prompt (length 40012) is longer "
                            "than the maximum model length of 32768. Make sure that `max_model_len` "
                            "is no smaller than the number of text tokens plus multimodal tokens."}),
    # OpenAI
    "overflow_openai": (400, {"error": {"message": "This model's maximum context length is 128000 "
                                        "tokens. However, your messages resulted in 131072 tokens. "
                                        "Please reduce the length of the messages.",
                                        "type": "invalid_request_error", "param": "messages",
                                        "code": "context_length_exceeded"}}),
    # Azure OpenAI's content filter on the prompt
    "content_filter": (400, {"error": {"message": _AZURE_FILTER, "type": None, "param": "prompt",
                                       "code": "content_filter", "status": 400,
                                       "innererror": {"code": "ResponsibleAIPolicyViolation",
                                                      "content_filter_result": {
                                                          "violence": {"filtered": True,
                                                                       "severity": "high"}}}}}),
    # OpenAI's safety system
    "content_policy": (400, {"error": {"message": "Your request was rejected as a result of our "
                                       "safety system.", "type": "invalid_request_error",
                                       "param": None, "code": "content_policy_violation"}}),
}  # fmt: skip
"""Provider error answers a fault can name: (status, JSON body) as the provider sends them."""


default_decide = quoted_in_output
"""Pass when every 'quoted' string of the criterion appears in the agent output."""


class FakeJudge(LoopbackJudge):
    """A judge server on 127.0.0.1 with scripted faults (see the module doc); `close()` stops it."""

    def __init__(self) -> None:
        self.faults: deque[Fault] = deque()
        self.context_chars: int | None = None
        """When set, a request whose messages hold more characters overflows (`"overflow"`)."""
        self.refuse_marker: str | None = None
        """When set, a request whose messages hold this text is refused (`"content_filter"`)."""
        self.slow_chars: int | None = None
        """When set, a request whose messages hold more characters hangs (`"hang"`): a judge
        slower on long prompts than the grader's timeout."""
        super().__init__(default_decide)

    @property
    def spec(self) -> str:
        return f"{self.url}#fake-judge"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            fault = self.faults.popleft() if self.faults else None
        fault = fault if fault is not None else self._standing(body)
        if isinstance(fault, int):
            return fault, {"error": {"message": f"scripted {fault}"}}
        if isinstance(fault, str) and fault in ERROR_FAULTS:
            return ERROR_FAULTS[fault]
        if fault == "hang":
            self.release.wait(10)
        model = body.get("model")
        if fault == "malformed":
            return 200, completion(model, "I believe the criterion is met.")
        if fault == "filtered":
            return 200, completion(model, "", "content_filter")
        if fault == "wrong_schema":
            return 200, completion(model, json.dumps({"verdict": "yes"}))
        return super().answer(body)

    def _standing(self, body: dict[str, Any]) -> Fault | None:
        """The standing modes' answer to `body`: `"content_filter"`, `"overflow"`, `"hang"` or
        None."""
        if self.refuse_marker is not None and any(
            self.refuse_marker in str(m.get("content") or "") for m in body.get("messages", [])
        ):
            return "content_filter"
        if self.context_chars is not None and prompt_chars(body) > self.context_chars:
            return "overflow"
        if self.slow_chars is not None and prompt_chars(body) > self.slow_chars:
            return "hang"
        return None
