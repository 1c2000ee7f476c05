"""The comparison of runs: their levels and steps side by side (in `harness report` of several runs)."""
