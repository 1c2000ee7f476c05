"""Live metrics out of a run (OpenTelemetry, Prometheus) and what AWS measured after it (CloudWatch).

``measure`` turns rows and history events into measurements (pure); ``prometheus`` and ``otel`` record them
as each system names them; ``meters`` is the Locust master's (or single process's) one front for both;
``cloudwatch`` reads AWS's own figures for the run's table, GSIs and bucket into ``cloudwatch.csv``.
See docs/live-metrics.md.
"""
