"""Task and world formats: APEX-Agents HF layout, training task dirs, parquet bundles."""
