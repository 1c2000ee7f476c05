"""``harness notebook [RUN_DIR ...]``: the review notebook in JupyterLab (``harness.products.notebook``)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    nb = sub.add_parser("notebook", help="open the review notebook in JupyterLab on 127.0.0.1 on these runs (default: "
                        "the latest under runs/); needs the notebook extra: `bash .ci/install notebook`")
    nb.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="run directories to review (default the latest)")
    nb.add_argument("--port", type=int, default=8888, help="the server's port on 127.0.0.1 (default 8888)")
    nb.add_argument("--no-browser", action="store_true", help="print the notebook's URL only, open no browser")
    nb.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.notebook.command import cmd_notebook

    return cmd_notebook(args.run_dirs, args.port, not args.no_browser)
