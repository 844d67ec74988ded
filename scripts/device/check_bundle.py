"""Check, before spending device time, that the GPU bundles hold what the lent machine lacks.

The lent H200 reaches no registry: whatever its image lacks must travel in the bundles
(`gpu_bundle.py`, `gpu_bundle.py --skyrl`), and a missing package shows up there as an import
error minutes into a run. This script builds, here, a venv holding what the image holds for the
code that runs (torch 2.11.0 with CUDA 13, transformers 5.17.0, and the rest of `IMAGE`: the
image's package list, /work/.library/device/KINDS.md), unpacks the bundles' parts over it (as
`gpu_run.sh` installs them there, on top of the image's packages), and imports every module the
vLLM rollouts and the SkyRL smoke load (`MODULES`), in SkyRL's FSDP workers' way
(`kwrl.train.skyrl.compat.setup_worker` first). It prints one line a module and exits 1 if any
import fails.

    python scripts/device/check_bundle.py [--venv /tmp/h200sim] [--bundle .devwhl/gpu-bundle]
        [--bundle .devwhl/skyrl-bundle] [MODULE ...]

The first run downloads about 4 GB (torch and its CUDA libraries) into the venv; later runs reuse
it. A failing import names the module; add its distribution to `VLLM_DEPS`, `KWRL_DISTS`,
`SKYRL_DISTS` or `SKYRL_WHEELS` in gpu_bundle.py, rebuild, and run this again.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

IMAGE = [
    "torch==2.11.0", "torchvision==0.26.0", "torchaudio==2.11.0", "transformers==5.17.0",
    "triton==3.6.0", "numpy", "accelerate", "peft", "tokenizers", "safetensors", "huggingface-hub",
    "aiohttp", "pyyaml", "requests", "psutil", "pandas", "pyarrow", "regex", "sentencepiece",
    "tiktoken", "tqdm", "rich", "typer", "click", "msgpack", "protobuf", "prometheus-client",
    "pillow", "einops", "numba", "opencv-python-headless", "cloudpickle", "jinja2", "filelock",
    "fsspec", "packaging", "xxhash", "py-cpuinfo", "uvloop", "six", "httpx", "anyio", "grpcio",
    "scipy", "tensorboard", "jaxtyping", "matplotlib", "setuptools", "wheel", "nvidia-ml-py",
]  # fmt: skip
"""What the image holds that the code below may import (a subset of its package list)."""

MODULES = [
    "vllm", "vllm.entrypoints.openai.api_server", "vllm_router.launch_router", "ray",
    "skyrl.train.entrypoints.main_base", "skyrl.train.entrypoints.main_generate",
    "skyrl.train.fully_async_trainer", "skyrl.backends.skyrl_train.inference_servers.setup",
    "skyrl.backends.skyrl_train.inference_servers.vllm_server_actor",
    "skyrl.backends.skyrl_train.inference_servers.new_inference_worker_wrap",
    "skyrl.backends.skyrl_train.weight_sync", "skyrl.backends.skyrl_train.workers.fsdp.fsdp_worker",
    "kwrl.cli", "kwrl.agent", "kwrl.llm.engines.vllm", "kwrl.train.local.trainer",
    "kwrl.train.skyrl.main_train", "kwrl.train.skyrl.main_eval", "kwrl.train.skyrl.generator",
]  # fmt: skip
"""What `gpu_run.sh` runs imports: vLLM's engine and server, Ray, SkyRL's trainer, workers,
inference servers and weight sync, and kwrl's entry points."""

PROBE = """
import importlib, sys
from kwrl.train.skyrl import compat
compat.setup_worker()
bad = 0
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
        print("ok    ", m, flush=True)
    except BaseException as e:
        bad += 1
        print("FAIL  ", m, type(e).__name__, str(e)[:300], flush=True)
sys.exit(1 if bad else 0)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--venv", type=Path, default=Path("/tmp/h200sim"))
    ap.add_argument("--bundle", type=Path, action="append")
    ap.add_argument("modules", nargs="*")
    a = ap.parse_args()
    bundles = a.bundle or [Path(".devwhl/gpu-bundle"), Path(".devwhl/skyrl-bundle")]
    venv, py = a.venv / "venv", a.venv / "venv" / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *IMAGE], check=True)
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    lines = []
    for b in bundles:
        site = a.venv / f"{b.name}-site"
        if not site.exists():
            # joined and unpacked beside, then renamed: an interrupted run leaves no half site
            # that a later run would take for the bundle
            joined = a.venv / f"{b.name}.tar.xz.part"
            partial = a.venv / f"{b.name}-site.part"
            shutil.rmtree(partial, ignore_errors=True)
            parts = sorted(b.glob("p*"), key=lambda p: int(p.name[1:]))
            with joined.open("wb") as out:
                for p in parts:
                    out.write(p.read_bytes())
            with tarfile.open(joined, "r:xz") as tar:
                tar.extractall(partial, filter="tar")
            joined.unlink()
            partial.rename(site)
        lines.append(str(site / "site"))
    lines.append(str(Path(__file__).resolve().parents[2] / "src"))
    # after the image's packages (gpu_run.sh copies the bundles over them: the same where, as
    # intended, a bundle holds only what the image lacks)
    (Path(purelib) / "zz-kwrl-bundles.pth").write_text("\n".join(lines) + "\n")
    rc = subprocess.run([str(py), "-c", PROBE, *(a.modules or MODULES)]).returncode
    sys.exit(rc)


if __name__ == "__main__":
    main()
