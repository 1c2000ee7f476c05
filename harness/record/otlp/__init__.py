"""OTLP/HTTP traces into the harness: decoding (``decode``), a loopback receiver (``receiver``), and the mapping
from span names and attributes to the iteration row's columns (``mapping``).

Neutral plumbing for the command driver (``harness.load.drivers.command``): it imports nothing of the harness but
the row's schema, so the mapping's columns are the reports' columns.
"""
