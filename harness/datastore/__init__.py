"""The system under test: a self-contained model of swamp's datastore sync layer.

It knows nothing of Locust. It takes boto3 clients and a clock, and every step
returns a plain ``Work`` record of what it did, so the harness can explain why
an iteration got slower independent of which server answered.
"""
