"""The agent: an MCP tool-calling loop with token-in/token-out recording, and its harbor wrapper.

`kwrl.agent:KwrlAgent` is the harbor import path; it is loaded lazily so that importing the loop,
the parsers or TITO does not import harbor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwrl.agent.harbor_agent import KwrlAgent

__all__ = ["KwrlAgent"]


def __getattr__(name: str) -> Any:
    if name == "KwrlAgent":
        from kwrl.agent.harbor_agent import KwrlAgent

        return KwrlAgent
    raise AttributeError(f"module 'kwrl.agent' has no attribute {name!r}")
