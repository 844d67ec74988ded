"""`SkyRLKwrlAgent`: KwrlAgent with the routing and caching keys a SkyRL fleet needs.

Two kwargs on top of KwrlAgent's: `session_id` (the generator passes one per trial attempt, so
SkyRL's router keeps a trial's turns on one engine and its prefix cache) and `weight_version`
(the policy version when the batch started; the completions client salts vLLM's prefix cache
with `w<version>`, so cache blocks are never shared across weight versions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwrl.agent.harbor_agent import KwrlAgent


class SkyRLKwrlAgent(KwrlAgent):
    """KwrlAgent whose policy client carries a session id and a weight-version cache salt."""

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        *args: Any,
        session_id: str | None = None,
        weight_version: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self.session_id = session_id
        self.weight_version = weight_version

    @staticmethod
    def name() -> str:
        return "kwrl-skyrl"

    def _build_policy(self) -> Any:
        policy = super()._build_policy()
        if self.weight_version is not None and hasattr(policy, "set_weight_version"):
            policy.set_weight_version(self.weight_version)
        return policy
