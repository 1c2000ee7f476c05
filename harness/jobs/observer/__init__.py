"""The observer: the datastore's own state, read from outside while the load runs (``RUN_DIR/observed.csv``).

The model reports what it did (items read, entries written); a datastore the
harness does not write (swamp through the command driver, a table other
clients use) reports nothing. The observer reads what is there, in swamp's
layouts, as a stranger would: ``layout.py`` (where things are), ``dynamodb.py``
and ``s3.py`` (the reads), ``budget.py`` (what it may spend, through the
pacing engine's budgets), ``reads.py`` (its own requests and units, apart from
the fleet's), ``observer.py`` (the loop and ``observed.csv``), ``start.py``
(one from primitives). It imports no Locust, no run plan and nothing of the
datastore model but the one key rule that is the layout itself.
"""
