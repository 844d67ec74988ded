"""Sandboxes for trials: the local bubblewrap environment (`local`), docker/modal presets, helpers."""
