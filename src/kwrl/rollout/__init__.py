"""Batches of trials: running them through harbor, failure causes, masking, summaries."""
