"""The multi-run products, one package each holding its configuration's use, its runner, its command and its page:
story, sweep, suite, climb, explore, runs (the history of run directories) and the review notebook."""
