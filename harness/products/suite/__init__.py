"""The suite (`harness suite`): a benchmark suite's results, their comparison and page."""
