"""Training: pure RL algorithms, the single-machine trainer (local/), and SkyRL integration (skyrl/)."""
