#!/usr/bin/env bash
# APEX-Agents evaluation (480 tasks, Pass@1 and mean score), evaluation only, no training.
# The tasks come from the APEX HF layout converted to task dirs (kwrl data convert), then to a
# prompts parquet (python -m kwrl.train.skyrl.data). Agent settings of the recipe's eval:
# max_steps 250. MODEL: a hub id or a checkpoint export dir. KWRL_JUDGE: the judge spec (default
# Gemini 2.5 Flash through litellm); set it empty for tasks whose criteria are all machine checks.
set -euo pipefail
source "$(dirname "$0")/common.sh"

JUDGE=${KWRL_JUDGE-litellm:gemini/gemini-2.5-flash}
JUDGE_ARGS=()
[[ -n "$JUDGE" ]] && JUDGE_ARGS=("kwrl.judge=$JUDGE")

RUN=${RUN:-apex-eval}
ROOT="$KWRL_SKYRL_ROOT/$RUN"
MODEL=${MODEL:-Qwen/Qwen3.6-35B-A3B}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-65536}

launch kwrl.train.skyrl.main_eval \
  "data.val_data=['${VAL_DATA:-$ROOT/apex480.parquet}']" \
  trainer.policy.model.path=$MODEL \
  trainer.policy.language_model_only=true \
  generator.inference_engine.language_model_only=true \
  generator.inference_engine.served_model_name=policy \
  trainer.placement.colocate_all=false \
  generator.inference_engine.num_engines=${NUM_ENGINES:-4} \
  generator.inference_engine.tensor_parallel_size=${TP:-2} \
  generator.inference_engine.gpu_memory_utilization=0.9 \
  generator.inference_engine.engine_init_kwargs.max_model_len=$MAX_MODEL_LEN \
  generator.eval_n_samples_per_prompt=${SAMPLES:-1} \
  generator.eval_sampling_params.temperature=1.0 \
  generator.eval_sampling_params.max_generate_length=8192 \
  trainer.eval_batch_size=480 \
  trainer.max_prompt_length=16384 \
  generator.max_input_length=16384 \
  trainer.logger=${LOGGER:-wandb} \
  trainer.project_name=kwrl \
  trainer.run_name=$RUN \
  trainer.export_path=$ROOT/exports \
  trainer.log_path=$ROOT/logs \
  environment.env_class=kwrl \
  kwrl.dataset=${DATASET:-$ROOT/dataset} \
  kwrl.trials_dir=$ROOT/trials \
  kwrl.sandbox.environment=${SANDBOX:-modal} \
  kwrl.concurrency=${TRIAL_CONCURRENCY:-240} \
  kwrl.agent.max_steps=250 \
  kwrl.agent.context_window=$MAX_MODEL_LEN \
  kwrl.agent.tool_call_parser=qwen3_xml \
  "${JUDGE_ARGS[@]}" \
  "$@"
