"""Self-pacing bulk jobs: pre-age a datastore, clean up, add background load, without throttling anyone.

A job aims at a ceiling of 70 % of the table's capacity, slows down the moment
DynamoDB throttles it (AIMD on its rate and on its requests in flight), shares
that ceiling with every other job on the same table, pauses on repeated
failure, and journals every item so it resumes after a quit or a crash.
"""
