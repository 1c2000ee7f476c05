"""The observer of each test, in the process that runs the test (the local process, or the master).

The observer (``harness.jobs.observer``) takes primitives, not the plan: here the
test's plan becomes them (the table or bucket, the scenario's layout names,
``[observe]`` overrides, the namespaces its users will take, the stand-in's
modelled read capacity), and the observer runs in a greenlet beside the
load. When the load stops it takes one last sample of everything (bounded),
and its totals go to the log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent

from harness.config.plan import RunPlan
from harness.jobs.observer.layout import Layout, LayoutError
from harness.jobs.observer.observer import FINAL_S, Observer
from harness.jobs.observer.start import Spend, Where, open_observer

log = logging.getLogger("harness")


@dataclass
class Running:
    observer: Observer
    greenlet: Any


def namespaces(plan: RunPlan, processes: list[int]) -> tuple[str, ...]:
    """The namespaces the test's users take (``DatastoreSpec.namespace_of``), () for the shared datastore.

    Each load-sending process (``processes``: their indexes, ``[0]`` for a local run) numbers its own users
    from 0; a process gets at most ceil(users / processes) of them. A namespace no user took reads as empty.
    """
    ds = plan.scenario.datastore
    if ds.namespaces == "shared":
        return ()
    users = plan.test.users if plan.test is not None else plan.scenario.fleet.peak_workers
    per = -(-max(1, users) // max(1, len(processes)))
    return tuple(dict.fromkeys(n for p in processes for i in range(per) if (n := ds.namespace_of(p, i))))


def layout_of(plan: RunPlan, processes: list[int], backend: Any) -> Layout:
    sc, r = plan.scenario, plan.resources
    ds, ob = sc.datastore, sc.observe
    return Layout(sc.backend, gsi=ob.gsi or ds.gsi, s3_index=ob.s3_index or ds.s3_index,
                  s3_shards=ob.s3_shards or ds.s3_shards, lock_scope=ds.lock_scope, sync=ds.sync,
                  global_lock=ds.global_lock, bookkeeping=ds.bookkeeping, namespaces=namespaces(plan, processes),
                  table=r.table, bucket=r.bucket, prefix=getattr(getattr(backend, "objects", None), "prefix", r.prefix))


def spend_of(plan: RunPlan) -> Spend:
    ob = plan.scenario.observe
    fid = plan.fidelity(1.0)  # the whole table's modelled capacity, not this process's share
    ddb = fid.dynamodb if fid.enabled else None
    modelled = ddb.read * ddb.scale if ddb is not None and ddb.mode == "provisioned" else None
    return Spend(every_s=ob.every_s, share=ob.share, rate_per_s=ob.rate_per_s, modelled_read=modelled)


def start(plan: RunPlan, backend: Any, run_dir: Path, sessions: Any, processes: list[int]) -> Running | None:
    """The test's observer, sampling from now; None when ``[observe] every = "off"`` or it cannot start."""
    if not plan.scenario.observe.on:
        return None
    e = plan.connection.service(plan.backend)
    try:
        layout = layout_of(plan, processes, backend)
        obs = open_observer(layout, Where(e.url, plan.connection.region, e.kind), spend_of(plan), run_dir,
                            sessions.get(e.credentials))
    except LayoutError as err:
        log.error("harness: observer not started: %s", err)
        return None
    except Exception as err:  # noqa: BLE001 - the load runs without it; the report says nothing was observed
        log.warning("harness: observer not started: %s: %s", type(err).__name__, err)
        return None
    a = obs.pacer.allow
    log.info("harness: observer: every %g s, %d group(s) of reads, budget %g %s/s (%s)", obs.every_s,
             len(obs.groups), a.rate, a.unit, a.source)
    return Running(obs, gevent.spawn(obs.run))


def finish(running: Running | None) -> None:
    """The load has stopped: the last sample (bounded), then the totals in the log."""
    if running is None:
        return
    obs = running.observer
    obs.finish()
    if not obs.wait(FINAL_S + 5):
        obs.stop()
        running.greenlet.kill(block=False)
    t = obs.totals()
    log.info("harness: observer: %d sample(s), %d gap(s), %d request(s), %.1f read units", sum(t["samples"].values()),
             sum(t["gaps"].values()), t["requests"], t["read_units"])
    obs.close()
