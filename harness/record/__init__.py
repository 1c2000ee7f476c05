"""Iteration records -> Parquet shards in a run directory."""
