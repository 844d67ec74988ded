"""Evaluation: pure metrics (metrics.py), resumable runs (run.py), the HTML report (report.py), `kwrl eval` / `kwrl report` (cli.py)."""
