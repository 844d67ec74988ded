"""Sandboxes for trials, zoned by seam; callers import what they need from the contract.

- `contract`: the environment contract every kwrl environment follows (`KwrlEnvironment`, the
  mounts, phases and limits a trial may count on) and what callers use of it;
- `base`: shared settings, the world a task runs in, the bubblewrap command line;
- `cgroups`, `outputs`: per-trial limits and the capped copy of what leaves a sandbox;
- `presets`: which harbor environment a trial runs in, by name; `regrade`: `kwrl grade`'s sandbox;
  `cli`: `kwrl sandbox ...`;
- zones: `local/` (the bubblewrap environment), `docker/` (the docker preset), `gateway/` (the
  world's MCP server inside a sandbox and the host's way in), `network/` (the verifier's egress
  allowlist), `conformance/` (`kwrl sandbox conform` and its attack kit).
"""
