"""The limits: the next ceilings (item size, hot keys) forecast from a run."""
