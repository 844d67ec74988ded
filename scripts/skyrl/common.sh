# Shared pieces of kwrl's SkyRL launch scripts (sourced, not run).
#
# HERO_ARGS: the hyperparameters of both recipe runs (DESIGN §7): GRPO without std normalisation,
# zero-variance groups dropped, DPPO (binary TV, delta 0.15/0.15), prompt_mean loss reduction,
# no KL (use_kl_loss=false explicitly: SkyRL defaults it to true), AdamW lr 1e-6 betas (0.9, 0.98)
# wd 0.01, grad clip 1.0, temperature 1.0, 3 epochs, a checkpoint every 5 steps.
#
# launch MODULE ARGS...: runs `$PYTHON -m MODULE ARGS...`; with KWRL_DRY_RUN=1 it prints the
# arguments one per line instead (tests parse them with SkyRL's own config loader).

: "${PYTHON:=python}"
: "${KWRL_SKYRL_ROOT:=$HOME/kwrl-skyrl}"

HERO_ARGS=(
  trainer.algorithm.advantage_estimator=grpo
  trainer.algorithm.grpo_norm_by_std=false
  trainer.algorithm.zero_variance_filter=true
  trainer.algorithm.policy_loss_type=dppo
  trainer.algorithm.dppo.dppo_type=binary_tv
  trainer.algorithm.dppo.delta_low=0.15
  trainer.algorithm.dppo.delta_high=0.15
  trainer.algorithm.loss_reduction=prompt_mean
  trainer.algorithm.use_kl_loss=false
  trainer.algorithm.use_kl_in_reward=false
  trainer.policy.optimizer_config.lr=1.0e-6
  "trainer.policy.optimizer_config.adam_betas=[0.9,0.98]"
  trainer.policy.optimizer_config.weight_decay=0.01
  trainer.policy.optimizer_config.max_grad_norm=1.0
  generator.sampling_params.temperature=1.0
  generator.sampling_params.top_p=1.0
  trainer.epochs=3
  trainer.ckpt_interval=5
)

launch() {
  local module=$1
  shift
  if [[ -n "${KWRL_DRY_RUN:-}" ]]; then
    printf '%s\n' "$@"
  else
    exec "$PYTHON" -m "$module" "$@"
  fi
}
