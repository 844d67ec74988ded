"""`SkyRLKwrlAgent`: KwrlAgent with the routing and caching keys a SkyRL fleet needs.

Two kwargs on top of KwrlAgent's: `session_id` (the generator passes one per trial, so SkyRL's
router keeps a trial's turns on one engine and its prefix cache; KwrlAgent appends a per-attempt
suffix; harbor's own per-trial value, assigned after construction, is kept aside) and `weight_version`
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
        self._router_session_id = session_id
        self._harbor_session_id: str | None = None
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self.weight_version = weight_version

    @property
    def session_id(self) -> str | None:  # pyright: ignore[reportIncompatibleVariableOverride]
        """The generator's session id when given, else harbor's (harbor assigns its own after
        building the agent; the router must see the generator's)."""
        return self._router_session_id or self._harbor_session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        self._harbor_session_id = value

    @staticmethod
    def name() -> str:
        return "kwrl-skyrl"

    def _build_policy(self) -> Any:
        policy = super()._build_policy()
        set_version = getattr(policy, "set_weight_version", None)  # token clients over HTTP
        if self.weight_version is not None and set_version is not None:
            set_version(self.weight_version)
        return policy
