"""Device harness only (PYTHONPATH=scripts/device): sandboxes start without limits the host lacks.

The lent H200 delegates only the memory controller to the command's cgroup (no pids, no cpu), so
`LocalEnvironment.start()` refuses every trial there (`cgroups.require_limits`). Every Python process
of the harness (pytest, and the `harbor run` it starts) imports this first and opts out, so the other
isolation and limit tests still run. Never on PYTHONPATH elsewhere.
"""

from kwrl.sandbox.base import LocalSandboxConfig

LocalSandboxConfig.model_fields["allow_missing_limits"].default = True
LocalSandboxConfig.model_rebuild(force=True)
