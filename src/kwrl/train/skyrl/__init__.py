"""SkyRL integration (the cluster path): kwrl's harbor trials as a SkyRL generator.

- `config`: SkyRL's config plus the `kwrl` section (dataset, agent, sandbox preset, judge env).
- `data`: kwrl task dirs -> the prompts parquet SkyRL's dataloader reads.
- `generator`: `KwrlHarborGenerator`, SkyRL's `GeneratorInterface` over `kwrl.rollout`.
- `agent`: KwrlAgent with per-trial session ids and per-weight-version cache salts.
- `main_train` (sync, colocated), `main_fully_async`, `main_eval`: SkyRL entry points.

Importing this package imports nothing heavy; the modules need the `skyrl` extra (Python 3.12).
"""
