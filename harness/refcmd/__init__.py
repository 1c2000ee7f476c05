"""``harness-swamp``: the reference command, the harness's own datastore model behind swamp's command line.

For the command driver's tests and demos, where swamp itself cannot run (its imports come from JSR, which
this project's machines do not reach): the spec's loop (``model <type> method run <method> <instance>``,
``model delete <instance> --force``, ``data prune --force``), one process per call as swamp is, its
datastore settings, cursor and catalog kept in the working directory between calls (as swamp keeps its own
in its repository), and its steps traced under swamp's span names through the OpenTelemetry SDK's OTLP
exporter (``tracing``). ``main`` parses the command line; ``repo`` is the working directory's state.
"""
