"""Where the rate changed and what the run recorded then (changes.py: ruptures PELT, annotated)."""
