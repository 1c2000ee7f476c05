"""The sweep (`harness sweep`): one run per fleet size, the Universal Scalability Law fitted, its page."""

# the file that makes a directory a sweep's: here, so `harness report DIR` can tell without loading the sweep
SWEEP_JSON = "sweep.json"
