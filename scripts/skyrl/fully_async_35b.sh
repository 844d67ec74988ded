#!/usr/bin/env bash
# Qwen3.6-35B-A3B, fully async (DESIGN §7 hero run): 16 prompts x 16 samples, max staleness 3.
# Separate GPUs for the learner (FSDP) and the vLLM engines (the fully-async trainer refuses
# colocation); sandboxes on Modal (per-world images) so CPU nodes are not needed.
# Defaults: 2 nodes x 8 GPUs: 8 learner GPUs, 4 engines x TP 2.
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUN=${RUN:-qwen3.6-35b-a3b-async}
ROOT="$KWRL_SKYRL_ROOT/$RUN"
MAX_MODEL_LEN=${MAX_MODEL_LEN:-65536}
PROMPTS=16
SAMPLES=16

launch kwrl.train.skyrl.main_fully_async \
  "data.train_data=['${TRAIN_DATA:-$ROOT/train.parquet}']" \
  "data.val_data=['${VAL_DATA:-$ROOT/val.parquet}']" \
  trainer.policy.model.path=Qwen/Qwen3.6-35B-A3B \
  trainer.policy.language_model_only=true \
  generator.inference_engine.language_model_only=true \
  generator.inference_engine.served_model_name=policy \
  "${HERO_ARGS[@]}" \
  trainer.fully_async.enabled=true \
  trainer.fully_async.max_staleness_steps=3 \
  trainer.fully_async.num_parallel_generation_workers=$((PROMPTS * 2)) \
  trainer.strategy=fsdp \
  trainer.placement.colocate_all=false \
  trainer.placement.policy_num_nodes=${POLICY_NODES:-1} \
  trainer.placement.policy_num_gpus_per_node=${POLICY_GPUS:-8} \
  trainer.policy.fsdp_config.cpu_offload=false \
  generator.inference_engine.num_engines=${NUM_ENGINES:-4} \
  generator.inference_engine.tensor_parallel_size=${TP:-2} \
  generator.inference_engine.gpu_memory_utilization=0.85 \
  generator.inference_engine.engine_init_kwargs.max_model_len=$MAX_MODEL_LEN \
  generator.n_samples_per_prompt=$SAMPLES \
  generator.eval_n_samples_per_prompt=1 \
  generator.batched=false \
  generator.use_cache_salt=true \
  trainer.train_batch_size=$PROMPTS \
  trainer.policy_mini_batch_size=$PROMPTS \
  trainer.micro_train_batch_size_per_gpu=1 \
  trainer.micro_forward_batch_size_per_gpu=1 \
  trainer.max_prompt_length=16384 \
  generator.max_input_length=16384 \
  generator.sampling_params.max_generate_length=8192 \
  trainer.algorithm.max_seq_len=$MAX_MODEL_LEN \
  trainer.eval_interval=${EVAL_INTERVAL:-10} \
  trainer.eval_before_train=false \
  trainer.hf_save_interval=5 \
  trainer.resume_mode=latest \
  trainer.logger=${LOGGER:-wandb} \
  trainer.project_name=kwrl \
  trainer.run_name=$RUN \
  trainer.ckpt_path=$ROOT/ckpts \
  trainer.export_path=$ROOT/exports \
  trainer.log_path=$ROOT/logs \
  environment.env_class=kwrl \
  kwrl.dataset=${DATASET:-$ROOT/dataset} \
  kwrl.trials_dir=$ROOT/trials \
  kwrl.sandbox.environment=${SANDBOX:-modal} \
  kwrl.concurrency=${TRIAL_CONCURRENCY:-512} \
  kwrl.retries=2 \
  kwrl.agent.max_steps=100 \
  kwrl.agent.context_window=$MAX_MODEL_LEN \
  kwrl.agent.tool_call_parser=qwen3_xml \
  kwrl.judge=${KWRL_JUDGE:-litellm:gemini/gemini-2.5-flash} \
  "$@"
