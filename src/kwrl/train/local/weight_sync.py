"""Weight broadcast from the learner (rank 0) to generation engines (ranks 1..N), torch.distributed.

Protocol, in this order on every rank (collectives must match):

1. setup: rank 0 broadcasts the bucket plan (parameter names, shapes, dtypes, bucket bounds) as
   one object over the control group, so receivers size their buffers without the learner's
   model or dtype;
2. per sync: a header `[version, 1]` over the control group, then one broadcast per bucket (a flat
   tensor holding several parameters back to back) over the data group;
3. close: a header `[-1, 0]`; receivers leave their loop.

Groups: the control group is always gloo (a CPU tensor: a receiver waiting for the next step
blocks only its own thread, never a GPU stream). The data group is NCCL when the learner and every
engine sit on distinct GPUs, else gloo through host memory ("host staging": the learner copies
each bucket into pinned CPU memory, gloo sends it over loopback, the engine copies it up). NCCL
refuses two ranks on one GPU ("duplicate GPU"); of the two ways around that, host staging is
chosen over CUDA IPC because it is the exact code path the CPU tests run, needs no IPC handle
lifetime protocol between processes, and works where CUDA IPC is blocked (containers without a
shared IPC namespace). It costs a device->host->device round trip per sync (for a 0.5B model in
bf16, ~1 GB: well under the learner's step time).

A receiver never writes into the engine's live weights: it fills its own buffers, then hands
views of them to `Engine.stage_weights`, which lands them between two decode steps, and waits
for that before receiving the next update into the same buffers.
"""

from __future__ import annotations

import datetime
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kwrl.errors import ConfigError, TrainError

if TYPE_CHECKING:
    import torch
    from torch.distributed import ProcessGroup

Backend = Literal["gloo", "nccl"]

_TIMEOUT = datetime.timedelta(hours=6)  # a receiver waits in a collective while the learner trains


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the rendezvous binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cuda_index(device: str) -> int | None:
    if not device.startswith("cuda"):
        return None
    return int(device.split(":", 1)[1]) if ":" in device else 0


def choose_backend(
    learner_device: str, generation_devices: Iterable[str], requested: str = "auto"
) -> Backend:
    """nccl iff every rank is on its own GPU (NCCL refuses a duplicate GPU), else gloo."""
    devices = [learner_device, *generation_devices]
    idx = [_cuda_index(d) for d in devices]
    distinct_gpus = all(i is not None for i in idx) and len(set(idx)) == len(idx)
    if requested == "gloo":
        return "gloo"
    if requested == "nccl":
        if not distinct_gpus:
            raise ConfigError(
                f"disaggregated.backend: nccl needs every rank on its own GPU, got {devices}; "
                'use backend = "auto" or "gloo"'
            )
        return "nccl"
    if requested != "auto":
        raise ConfigError(f"disaggregated.backend {requested!r}: choose auto, gloo or nccl")
    import torch.distributed as dist

    return "nccl" if distinct_gpus and dist.is_nccl_available() else "gloo"


@dataclass
class Groups:
    """The process groups of one rank: `ctrl` (gloo, headers) and `data` (the backend's)."""

    rank: int
    world_size: int
    backend: Backend
    ctrl: ProcessGroup
    data: ProcessGroup


def init_groups(rank: int, world_size: int, port: int, backend: Backend, device: str) -> Groups:
    """Join the rendezvous at 127.0.0.1:`port`; every rank calls this with the same world."""
    import torch
    import torch.distributed as dist

    if backend == "nccl":
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        backend=backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=_TIMEOUT,
    )
    world = dist.group.WORLD
    assert world is not None
    ctrl = dist.new_group(backend="gloo", timeout=_TIMEOUT) if backend == "nccl" else world
    assert isinstance(ctrl, dist.ProcessGroup)
    return Groups(rank, world_size, backend, ctrl, world)


def close_groups() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


@dataclass
class Bucket:
    dtype: str
    names: list[str]
    shapes: list[tuple[int, ...]]
    numels: list[int]

    @property
    def numel(self) -> int:
        return sum(self.numels)


def plan_buckets(named: Iterable[tuple[str, torch.Tensor]], bucket_mb: int) -> list[Bucket]:
    """Consecutive parameters of one dtype, packed until a bucket holds about `bucket_mb` MiB."""
    limit = bucket_mb * (1 << 20)
    out: list[Bucket] = []
    size = 0
    for name, t in named:
        dtype = str(t.dtype).removeprefix("torch.")
        nbytes = t.numel() * t.element_size()
        if not out or out[-1].dtype != dtype or (size + nbytes > limit and out[-1].names):
            out.append(Bucket(dtype, [], [], []))
            size = 0
        b = out[-1]
        b.names.append(name)
        b.shapes.append(tuple(t.shape))
        b.numels.append(t.numel())
        size += nbytes
    return out


def _split(flat: torch.Tensor, bucket: Bucket) -> dict[str, torch.Tensor]:
    views: dict[str, torch.Tensor] = {}
    off = 0
    for name, shape, n in zip(bucket.names, bucket.shapes, bucket.numels, strict=True):
        views[name] = flat[off : off + n].view(shape)
        off += n
    return views


class WeightSender:
    """Rank 0: broadcasts a model's parameters after every learner step."""

    def __init__(self, model: torch.nn.Module, groups: Groups, *, bucket_mb: int = 256) -> None:
        import torch
        import torch.distributed as dist

        self.groups = groups
        self.params = dict(model.named_parameters())  # tied weights appear once
        self.buckets = plan_buckets(self.params.items(), bucket_mb)
        device = next(iter(self.params.values())).device
        self.stage_on_host = groups.backend == "gloo" and device.type == "cuda"
        pin = self.stage_on_host
        self._bufs = [
            torch.empty(
                b.numel,
                dtype=getattr(torch, b.dtype),
                device="cpu" if groups.backend == "gloo" else device,
                pin_memory=pin,
            )
            for b in self.buckets
        ]
        self.nbytes = sum(b.numel() * b.element_size() for b in self._bufs)
        plan: list[Any] = [[(b.dtype, b.names, b.shapes, b.numels) for b in self.buckets]]
        dist.broadcast_object_list(plan, src=0, group=groups.ctrl)
        self.last_seconds = 0.0

    def _header(self, version: int, go: int) -> None:
        import torch
        import torch.distributed as dist

        dist.broadcast(torch.tensor([version, go], dtype=torch.long), src=0, group=self.groups.ctrl)

    def broadcast(self, version: int) -> float:
        """Send every parameter as weight version `version`; returns the seconds it took."""
        import torch
        import torch.distributed as dist

        t0 = time.perf_counter()
        self._header(version, 1)
        with torch.no_grad():
            for b, buf in zip(self.buckets, self._bufs, strict=True):
                off = 0
                for name, n in zip(b.names, b.numels, strict=True):
                    src = self.params[name].detach().reshape(-1)
                    buf[off : off + n].copy_(src, non_blocking=self.stage_on_host)
                    off += n
                if self.stage_on_host:
                    torch.cuda.current_stream().synchronize()
                dist.broadcast(buf, src=0, group=self.groups.data)
        if self.groups.backend == "nccl":
            torch.cuda.current_stream().synchronize()
        self.last_seconds = time.perf_counter() - t0
        return self.last_seconds

    def close(self) -> None:
        """Tell every receiver to stop (once)."""
        self._header(-1, 0)


@dataclass
class SyncStats:
    applied: list[int] = field(default_factory=list)
    """Versions landed in the engine, in order."""
    recv_s: list[float] = field(default_factory=list)
    """Seconds from the header to the last bucket received, per sync."""
    apply_wait_s: list[float] = field(default_factory=list)
    """Seconds from staging to the engine landing the update, per sync."""


class WeightReceiver:
    """Ranks 1..N: a thread that receives each broadcast and stages it into an `Engine`."""

    def __init__(self, engine: Any, groups: Groups) -> None:
        import torch
        import torch.distributed as dist

        self.engine = engine
        self.groups = groups
        plan: list[Any] = [None]
        dist.broadcast_object_list(plan, src=0, group=groups.ctrl)
        self.buckets = [Bucket(d, n, [tuple(s) for s in sh], nu) for d, n, sh, nu in plan[0]]
        device = engine.device
        on_host = groups.backend == "gloo"
        self._bufs = [
            torch.empty(
                b.numel,
                dtype=getattr(torch, b.dtype),
                device="cpu" if on_host else device,
                pin_memory=on_host and device.type == "cuda",
            )
            for b in self.buckets
        ]
        self._stream = torch.cuda.Stream(device) if groups.backend == "nccl" else None
        self._views: dict[str, torch.Tensor] = {}
        for b, buf in zip(self.buckets, self._bufs, strict=True):
            self._views.update(_split(buf, b))
        own = engine.model.state_dict()
        missing = sorted(set(self._views) - set(own))
        if missing:
            raise TrainError(
                f"weight sync: the learner's parameters {missing[:5]} are not in the engine's model"
            )
        self.stats = SyncStats()
        self._cond = threading.Condition()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="kwrl-weight-recv", daemon=True)

    def start(self) -> WeightReceiver:
        self._thread.start()
        return self

    def _recv_one(self) -> int | None:
        import torch
        import torch.distributed as dist

        header = torch.zeros(2, dtype=torch.long)
        dist.broadcast(header, src=0, group=self.groups.ctrl)
        version, go = int(header[0]), int(header[1])
        if not go:
            return None
        t0 = time.perf_counter()
        if self._stream is not None:
            # The engine copied the last update out of these buffers on its (default) stream;
            # overwrite them only after that copy ran.
            self._stream.wait_stream(torch.cuda.default_stream(self.engine.device))
            with torch.cuda.stream(self._stream):
                for buf in self._bufs:
                    dist.broadcast(buf, src=0, group=self.groups.data)
            self._stream.synchronize()
        else:
            for buf in self._bufs:
                dist.broadcast(buf, src=0, group=self.groups.data)
        t1 = time.perf_counter()
        applied = self.engine.stage_weights(self._views, version=version).result()
        self.stats.recv_s.append(t1 - t0)
        self.stats.apply_wait_s.append(time.perf_counter() - t1)
        return int(applied)

    def _loop(self) -> None:
        try:
            if self._stream is not None:  # the current device is per thread
                import torch

                torch.cuda.set_device(self.engine.device)
            while (v := self._recv_one()) is not None:
                with self._cond:
                    self.stats.applied.append(v)
                    self._cond.notify_all()
        except BaseException as e:  # surfaced to the worker's main thread by wait_version
            self.error = e
        finally:
            with self._cond:
                self._cond.notify_all()

    def wait_version(self, version: int, timeout: float | None = None) -> int:
        """Block until the engine runs weights of at least `version`; returns its version."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self.engine.weight_version < version:
                if self.error is not None:
                    raise TrainError(f"weight sync failed: {self.error!r}") from self.error
                if not self._thread.is_alive():
                    raise TrainError(f"weight sync stopped before version {version} arrived")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TrainError(f"weight sync: version {version} not applied in {timeout} s")
                self._cond.wait(left)
            return int(self.engine.weight_version)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
