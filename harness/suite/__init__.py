"""Benchmark suites: one sync operation per trial on a datastore of a stated shape, timed per phase.

``shape`` (swamp's seeded tree), ``phases`` (the backend proxy that splits a
pull into its index read and its downloads), ``runner`` (a scenario's setup,
trials and records). The suite file and its plan are ``harness.plan.suite``;
the command is ``harness.commands.suite``; the report ``reports/suite/``.
"""
