"""One exception tree for kwrl.

Errors that cross a stage boundary travel as data in results (a trial's `failure_cause`);
these classes are for what is raised inside a stage. Messages name the file and the field
and say how to fix the input.
"""

from __future__ import annotations

from pathlib import Path


class KwrlError(Exception):
    """Base of every error kwrl raises on purpose."""


class TaskFormatError(KwrlError):
    """A task, world or dataset file is malformed. Carries the file and the field at fault."""

    def __init__(self, path: Path | str, field: str | None, message: str) -> None:
        self.path = str(path)
        self.field = field
        self.message = message
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {message}")


class UnsafeArchiveError(TaskFormatError):
    """An archive member would escape its destination or is not a plain file or directory."""


class ConfigError(KwrlError):
    """A config file or override is invalid."""


class OutputError(KwrlError):
    """A verb's output would delete or change what the user did not ask it to change (an existing
    file, the input, a dir holding files kwrl did not write: `kwrl.io.claim_output`)."""


class WorldError(KwrlError):
    """A world's data or an app operation failed (bad path, bad file, unknown record)."""


class SandboxError(KwrlError):
    """A sandbox could not be started, reached or stopped."""


class SandboxLimitError(SandboxError):
    """An agent-phase command hit the trial's process, memory or disk limit (its commands were
    killed); the rollout classifies it `resource_limit`, the agent's doing (`kwrl.sandbox.contract`)."""


class SandboxTimeoutError(SandboxError):
    """A command ran past its `timeout_sec`; it and its process group were killed."""


class TrialFormatError(KwrlError):
    """A finished trial's record does not read as its type (result.json's agent metadata,
    verifier/grades.json): the message names the file and the field."""


class AgentError(KwrlError):
    """The agent loop failed for a reason outside the policy's control."""


class PolicyError(KwrlError):
    """A policy client failed to produce a completion (transport, server, context overflow)."""


class JudgeError(KwrlError):
    """A judge failed to produce a verdict after its retries; the trial is an error, never a 0."""


class TrainError(KwrlError):
    """The trainer cannot go on (bad batch, checkpoint mismatch)."""
