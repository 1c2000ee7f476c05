"""The top layer: who starts what (``harness run``, the bulk jobs, ``harness worker`` / ``standin``).

These modules may import every layer below them (plan, load, pacing,
datastore, aws, record, safety); nothing below imports them, so the load layer
and the pacing layer stay independent of each other
(tests/test_safety_layering.py). Each works from a run plan (``harness.plan``):
``harness run``'s own, a finished run's ``plan.json``, or a job's.
"""
