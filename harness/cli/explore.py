"""``harness explore``: the datastore's operations disturbed at every request boundary, each history checked
(``harness.products.explore``): the systematic walk, ``--random`` schedules, or ``--replay`` of stored ones."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError


def add_parser(sub: Any) -> None:
    ex = sub.add_parser("explore", help="every request boundary of the datastore's operations, disturbed one at a "
                                        "time (freeze, lost answer, crash, GSI lag), each history checked (exit 3 "
                                        "when a schedule violates)")
    ex.add_argument("--backend", choices=["dynamodb", "s3"], help="one backend (default both)")
    ex.add_argument("--sync", choices=["one-lock", "two-phase"], help="one sync profile (default both)")
    ex.add_argument("--layout", help="one layout: per-model or legacy (DynamoDB), sharded or monolith (S3); "
                                     "default every layout")
    ex.add_argument("--fencing", choices=["on", "off"], default="on", help="off: swamp's own commit (default on)")
    ex.add_argument("--ops", help="comma-separated: sync, model-run, delete, prune, pull (default all)")
    ex.add_argument("--quick", action="store_true",
                    help="the default layout only, fewer of the other actor's operations (CI: minutes)")
    ex.add_argument("--run-dir", help="where explore.json and its page go (default runs/explore-<time>)")
    ex.add_argument("--random", type=int, metavar="N",
                    help="draw N random schedules of three actors instead (every operation, several disturbances "
                         "each; Hypothesis shrinks a violating one), split over the targets")
    ex.add_argument("--seed", type=int, help="--random's seed (default a new one, printed): the same schedules "
                                             "again on the same Hypothesis version")
    ex.add_argument("--budget", metavar="DURATION", help="stop after this wall time (e.g. 90s, 10m)")
    ex.add_argument("--uploads-at-commit", choices=["profile", "on", "off", "random"], default="profile",
                    help="where content is written: as the profile says (default), under the commit's lock (on), "
                         "in the push's prepare (off), or random: drawn for each schedule (--random only)")
    ex.add_argument("--s3-shards", choices=["model", "swamp", "random"], default="model",
                    help="S3's shard form: one a model (default), swamp's keys, or random: drawn for each schedule "
                         "(--random only)")
    ex.add_argument("--replay", metavar="EXPLORE_JSON", help="play the schedules an explore.json of --random stored "
                                                             "again (no Hypothesis needed), in the explorer's words")
    ex.add_argument("--schedule", type=int, metavar="K", help="with --replay: its K-th stored schedule only")
    ex.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.explore import command as ex_cmd

    if args.replay is not None or args.schedule is not None:
        if args.replay is None:
            raise HarnessError("--schedule picks a schedule of --replay's file: give --replay EXPLORE_JSON")
        return ex_cmd.cmd_explore_replay(args.replay, args.schedule)
    if args.random is not None:
        return ex_cmd.cmd_explore_random(args.backend, args.sync, args.layout, args.fencing, args.random,
                                         args.seed, args.budget, args.run_dir, quick=args.quick, ops=args.ops,
                                         uploads=args.uploads_at_commit, shards=args.s3_shards)
    if args.seed is not None:
        raise HarnessError("--seed is --random's: add --random N")
    return ex_cmd.cmd_explore(args.backend, args.sync, args.layout, args.fencing, args.ops, args.quick,
                              args.run_dir, args.budget, uploads=args.uploads_at_commit, shards=args.s3_shards)
