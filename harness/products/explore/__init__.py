"""``harness explore``: every request boundary of the datastore's operations, disturbed one at a time.

FoundationDB's simulation and Jepsen's histories, for a sync layer: each
operation's request sequence is learned once, then replayed with two actors on
in-process moto and a FakeClock, once for every request boundary and every
disturbance (``faults.py``), and each history is judged by the safety checker.
"""
