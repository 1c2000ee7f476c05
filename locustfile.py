"""Entry point for `locust -f locustfile.py --scenario NAME ...` (any Locust option works).

The users, options and event wiring live in harness/load/locustfile.py.
"""

from harness.load.locustfile import *  # noqa: F401,F403
from harness.load.locustfile import SwampWorkerUser  # noqa: F401
