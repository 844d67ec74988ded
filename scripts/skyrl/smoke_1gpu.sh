#!/usr/bin/env bash
# 1-GPU smoke (DESIGN §7): Qwen3.5-0.8B, 2 prompts x 2 samples, 2 steps, sync trainer, colocated
# (vLLM engine and FSDP learner share the GPU). Local bubblewrap sandboxes on the same machine.
#
#   python -m kwrl.train.skyrl.data DATASET $KWRL_SKYRL_ROOT/smoke/train.parquet
#   DATASET=... KWRL_JUDGE=... scripts/skyrl/smoke_1gpu.sh [extra overrides]
#
# MODEL: a hub id or a local folder (default Qwen/Qwen3.5-0.8B); where no hub is reachable, a
# packaged model's folder: MODEL=$(python -m kwrl.llm.packaged smollm2-135m | tail -1) with
# TOOL_CALL_PARSER=hermes (SmolLM2's chat template has no tool format of its own).
# FLASH_ATTN (default false: the `gpu` extra installs no flash-attn, a GPU build): true runs the
# policy with FlashAttention-2 and packed micro-batches (SkyRL packs only with it).
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUN=${RUN:-smoke-1gpu}
ROOT="$KWRL_SKYRL_ROOT/$RUN"
MAX_MODEL_LEN=${MAX_MODEL_LEN:-16384}
MODEL=${MODEL:-Qwen/Qwen3.5-0.8B}

launch kwrl.train.skyrl.main_train \
  "data.train_data=['${TRAIN_DATA:-$ROOT/train.parquet}']" \
  "data.val_data=[]" \
  trainer.policy.model.path=$MODEL \
  trainer.policy.language_model_only=true \
  generator.inference_engine.language_model_only=true \
  generator.inference_engine.served_model_name=policy \
  "${HERO_ARGS[@]}" \
  trainer.strategy=fsdp \
  trainer.flash_attn=${FLASH_ATTN:-false} \
  trainer.remove_microbatch_padding=${FLASH_ATTN:-false} \
  trainer.placement.colocate_all=true \
  trainer.placement.policy_num_nodes=1 \
  trainer.placement.policy_num_gpus_per_node=1 \
  generator.inference_engine.num_engines=1 \
  generator.inference_engine.tensor_parallel_size=1 \
  generator.inference_engine.gpu_memory_utilization=0.5 \
  generator.inference_engine.engine_init_kwargs.max_model_len=$MAX_MODEL_LEN \
  generator.n_samples_per_prompt=2 \
  generator.batched=false \
  trainer.train_batch_size=2 \
  trainer.policy_mini_batch_size=2 \
  trainer.micro_train_batch_size_per_gpu=1 \
  trainer.micro_forward_batch_size_per_gpu=1 \
  trainer.max_training_steps=2 \
  trainer.max_prompt_length=8192 \
  generator.max_input_length=8192 \
  generator.sampling_params.max_generate_length=2048 \
  trainer.algorithm.max_seq_len=$MAX_MODEL_LEN \
  trainer.eval_interval=-1 \
  trainer.eval_before_train=false \
  trainer.logger=${LOGGER:-console} \
  trainer.run_name=$RUN \
  trainer.ckpt_path=$ROOT/ckpts \
  trainer.export_path=$ROOT/exports \
  trainer.log_path=$ROOT/logs \
  environment.env_class=kwrl \
  kwrl.dataset=${DATASET:-$ROOT/dataset} \
  kwrl.trials_dir=$ROOT/trials \
  kwrl.sandbox.environment=local \
  kwrl.concurrency=4 \
  kwrl.agent.max_steps=20 \
  kwrl.agent.context_window=$MAX_MODEL_LEN \
  kwrl.agent.tool_call_parser=${TOOL_CALL_PARSER:-qwen3_xml} \
  "$@"
