"""``harness story [LADDER]``: a ladder of chapters and one narrated report (``harness.products.story``)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    st = sub.add_parser("story", help="run a ladder of chapters (the spec's climb by default) and write one "
                        "narrated report")
    st.add_argument("ladder", nargs="?", default="migrating-bottleneck", metavar="LADDER",
                    help="a ladder from stories/ (see --list) or a .toml path (default migrating-bottleneck)")
    st.add_argument("--backend", choices=["dynamodb", "s3"],
                    help="run every single-backend chapter on this backend (a chapter of both keeps both)")
    st.add_argument("--quick", action="store_true", help="each run's quick settings (shorter; see the ladder)")
    st.add_argument("--strict", action="store_true", help="exit 3 when a chapter did not show what it expected")
    st.add_argument("--run-dir", help="the story directory (default runs/story-<ladder>-<time>)")
    st.add_argument("--driver", choices=["model", "swamp"], default="model",
                    help="swamp: a real-swamp ladder (driver = \"swamp\"), every chapter on the real swamp CLI")
    st.add_argument("--swamp", metavar="PATH", help="--driver swamp: the swamp executable (default: swamp on PATH)")
    st.add_argument("--swamp-repo", metavar="NAME=DIR", action="append", default=[],
                    help="--driver swamp: a repository template the ladder's chapters name (swamp_repo = NAME), "
                         "one per extension version; repeat for each")
    st.add_argument("--beside", metavar="MODEL_STORY_DIR",
                    help="--driver swamp: a story directory of the model's ladder (`harness story "
                         "migrating-bottleneck`); the page shows each chapter beside the model's chapter's verdict")
    st.add_argument("--list", action="store_true", help="list the shipped ladders and their chapters")
    st.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.story.command import StoryOptions, cmd_list, cmd_story

    if args.list:
        return cmd_list()
    return cmd_story(StoryOptions(ladder=args.ladder, backend=args.backend, quick=args.quick, strict=args.strict,
                                  run_dir=args.run_dir, driver=args.driver, swamp=args.swamp,
                                  swamp_repos=tuple(args.swamp_repo), beside=args.beside), env)
