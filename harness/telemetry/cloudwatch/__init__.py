"""CloudWatch in one place: its reader (reader.py), a run's figures fetched after it (after_run.py) and the
report's section (section.py)."""
