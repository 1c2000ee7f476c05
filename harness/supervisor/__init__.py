"""`harness run`'s supervisor: one plan's run (run.py), Locust's process group and its signals (supervise.py),
the parts it watches (watch.py), the disk (disk.py), what died (failed_parts.py), the progress line (progress.py),
the gates around a run (gates.py) and the worker/stand-in processes of a distributed run (distributed.py)."""
