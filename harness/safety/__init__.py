"""Did the datastore stay correct under load? A checker over the run's history and final remote state.

``history`` reads the events the workers recorded (``RUN_DIR/history/*.jsonl``);
``state`` captures what readers can see at the end (``RUN_DIR/final-state.jsonl.gz``);
``checker`` compares the two (pure functions); ``audit`` ties them to a run
directory and writes ``RUN_DIR/safety.json``.
"""
