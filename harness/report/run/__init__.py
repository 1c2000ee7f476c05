"""The run report (`harness report`): a run's numbers, verdict, causes, words, figures and page."""
