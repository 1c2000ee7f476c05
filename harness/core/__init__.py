"""The primitives every layer may use: errors, time (the clock, virtual time), units (durations, rates, item sizes),
what a step did (work), intervals, the AWS error classifier, whole-file writes and the environment's one reader.

They import nothing else of the harness (docs/layout.md)."""
