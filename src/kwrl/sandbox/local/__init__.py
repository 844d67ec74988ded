"""`LocalEnvironment`: a harbor environment that runs a trial in a bubblewrap sandbox on this machine.

It follows kwrl's environment contract (`kwrl.sandbox.contract.KwrlEnvironment`) and passes its
conformance suite (`kwrl sandbox conform`). The package, by seam:
- `env`: harbor's adapter and the lifecycle (`start`, `stop`, `exec`);
- `commands`: processes under limits (each command's argv, its run, what ends it);
- `phases`: the verifier phase's start and what leaves the sandbox (outputs, files in and out);
- `gateway`: the world gateway's side (started inside, relayed to `mcp_url`, `gateway_fate`);
- `init`: the sandbox's pid 1 (a small C program where the host compiles one, else Python);
- `enter`: the helper that runs a command inside a running sandbox, every privilege dropped
  before anything inside is loaded (C where the host compiles it, else Python; `native` compiles);
- `pool`: pre-started spare sandboxes a trial's start() takes (`LocalSandboxConfig.pool`, off by
  default);
- `state`: the fields and helpers they share. The gateway's starters (`kwrl.sandbox.gateway.launch`,
  `kwrl.sandbox.gateway.zygote`) take a `GatewayLaunch`, not the environment.

Use it by import path: `harbor run -p TASK -a oracle -e kwrl.sandbox.local:LocalEnvironment`, or
`EnvironmentConfig(import_path="kwrl.sandbox.local:LocalEnvironment")` in a trial config.

Lifecycle (harbor's `BaseEnvironment` contract):
- `start()`: a sandbox root `<sandbox_dir>/<pid>-<token>/` (mode 0700) with `disk/ merged/ run/
  tests/`; a private mount namespace (`unshare --mount`) in which `disk/` is a tmpfs of the trial's
  `storage_mb` and `storage_inodes` (files and dirs) and the world an overlayfs (lower = task overlay over world seed, upper on that
  tmpfs), so populating a world costs one mount whatever its size, the seed is never written and
  the world's writes are bounded; bwrap with its own pid, ipc, uts, cgroup and net namespaces
  (loopback only), no capabilities, the host read-only or absent, the root itself read-only
  (only the world, `/tmp`, `/dev/shm`, the output dirs and `/solution` are writable), and kwrl's init as the pid
  namespace's pid 1 (`init`: agent code's signals cannot end the sandbox, nor can it ptrace the
  init or write through its fds into the host's sandbox.log); `/logs/{agent,artifacts}` bound
  from private dirs on that tmpfs (copied into harbor's trial dir as plain files and dirs when
  harbor asks, `prepare_logs_for_host`, and when the agent phase ends, up to the caps of
  `outputs.copy_out`: agent code never touches a dir the host writes or reads), `/logs/verifier` (harbor's) read-only; per-trial cgroups bound
  memory, process count and CPU (task.toml `[environment]`, checked positive); the world gateway
  started inside on a listening socket the host made at `run/gateway.sock` (`/kwrl/run` is
  read-only inside), relayed to `mcp_url` (http://127.0.0.1:PORT/mcp/) on the host.
- `exec()`: agent phase: `enter` joins the sandbox (same processes, loopback-only net, its root)
  and drops every capability before the command, the first program loaded from the sandbox's
  root, runs (nothing agent code planted there can run privileged), env exactly `base_env`, no file over `storage_mb` (RLIMIT_FSIZE); the
  tmpfs (world's writes plus /logs/{agent,artifacts}) full ends the command with
  `SandboxLimitError`.
  Verifier phase (from the moment harbor uploads `/tests`): the sandbox's init is killed, which
  ends its whole pid namespace (the gateway, its `code_execution` children, daemons; a holder
  process keeps the mounts), the agent's outputs are copied out (links, fifos and sockets left
  out, listed in sandbox.json `dropped`) and /logs/verifier emptied; then each command runs in a
  fresh bwrap over the same world, from `/` with `PYTHONSAFEPATH=1`, in a network namespace of
  its own whose one way out is the egress proxy (`kwrl.sandbox.network.egress`: the judge, the task's
  allowlist, public hosts under harbor's `public` mode, never the host's loopback or private
  networks; nothing under `no-network`), sees `/tests`, and `/kwrl/initial/{world,overlay}`
  read-only (docs/contracts.md; an empty overlay for a task without one), and keeps one
  capability, CAP_DAC_READ_SEARCH: the grader reads the world whatever modes agent code left on
  it (Archipelago's grader is root); and those to start a sandbox of its own for LibreOffice,
  network-less, as `nobody` (`SandboxSpec.nest`, `kwrl.grading.recalc`). `/tests` never exists
  in the agent's sandbox. Output is capped at `outputs.OUTPUT_CAP` bytes per stream in both
  phases.
- `stop()`: freeze and SIGKILL every process in the trial's cgroups, end the sandbox (its mount
  namespace, hence the overlay mount, goes with it), write `sandbox.json` (limit hits) into the
  trial dir, remove the cgroups and the root. Idempotent; also runs after an agent crash.

As a plain user (rootless), the mounts are made in a user namespace the user owns (`unshare --user
--map-root-user`; the user is uid 0 in there, without capabilities in the sandbox): overlayfs with
`userxattr`, commands entering the user namespace too (keeping the user's uid, uid 0 in
there), the gateway started through `enter` (exec mode); RLIMIT_NPROC, which the kernel counts
per user namespace, binds the process limit and the pid namespace ends every process; memory and CPU need a delegated cgroup v2 (else start() refuses
unless `allow_missing_limits`). World files the trial changes must be the user's own.

Non-obvious choices: files move in and out through `tar`/`cat` run *inside* the sandbox, never
through host paths, so a symlink planted by agent code cannot redirect a host-side write. A trial
that hits its process or memory limit during `exec` gets `SandboxLimitError` (its commands are
killed) instead of hanging until the agent timeout. Not in the verifier phase: it has `memory_mb`
of its own beyond what the agent phase left charged (the world's tmpfs pages), a hit there ends no
command, and sandbox.json reports it apart (`verifier_events`) for the rollout to score as the
agent's.
"""

from kwrl.sandbox.local.env import LocalEnvironment

__all__ = ["LocalEnvironment"]
