"""The single-machine trainer: learner (torch), prompt sampler, checkpoints, the RL loop."""
