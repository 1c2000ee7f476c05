"""The harness inside Locust's web UI: the form, the harness tab, the panel of tests and reports."""
