"""``harness runs``: the history of run directories (history.py) and a scenario's trend across them (trend.py)."""
