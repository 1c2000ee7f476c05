"""A scenario's ``[[fleet.stages]]`` as Locust's ``LoadTestShape``: the users of each stage.

Locust uses a shape class whenever its locustfiles define one, and then its web form no longer asks for a
user count; so this module is a locustfile of its own, which ``harness run`` adds to Locust's ``-f`` only
when the scenario has stages (``locust -f locustfile.py,harness/load/shape.py`` by hand). A stage's arrival
rate is not Locust's business: the open fleet's arrival queue reads it (``Fleet.rate_at``).
"""

from __future__ import annotations

from typing import Any

from locust import LoadTestShape


class StagesShape(LoadTestShape):
    """The stages of the run's scenario, read from its plan on the master (or the single process)."""

    def tick(self) -> tuple[int, float] | None:
        h: Any = getattr(self.runner.environment, "harness", None) if self.runner else None
        if h is None or h.plan is None:
            return None
        fleet = h.plan.scenario.fleet
        # Past the last stage, the last stage's: the harness's session ends the test at the run's bound and
        # records why (a shape returning None would race that record). No stages (the form chose another
        # scenario): its fleet.
        users = fleet.users_at(self.get_run_time())
        return users, max(fleet.spawn_rate, float(users))
