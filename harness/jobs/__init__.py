"""The harness's own bulk work, paced against the table's capacity: the pacing engine (pacing/), the bulk jobs
(bulk.py: pre-age, fill, cleanup, resume), the work beside a run (background.py) and the observer (observer/)."""
