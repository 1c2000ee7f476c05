"""The harness's options reach Locust's web UI form; the run plan (one hidden option) stays out of it.

Run in a subprocess: importing Locust monkey-patches the whole interpreter (gevent),
which must happen before anything imports ssl and must not leak into other tests.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json
from locust import argument_parser, events
import harness.load.locustfile  # registers the options listener
parser = argument_parser.get_empty_argument_parser()
argument_parser.setup_parser_arguments(parser)
events.init_command_line_parser.fire(parser=parser)
opts = parser.parse_args(["--scenario", "shared-lock", "--backend", "s3", "--run-dir", "x"])
print(json.dumps({"ui": sorted(parser.args_included_in_web_ui), "parsed": [opts.scenario, opts.backend, opts.run_dir]}))
"""


def test_custom_options_in_the_web_ui_form():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    in_ui = set(got["ui"])
    assert {"scenario", "backend", "run_dir", "latency"} <= in_ui
    assert not {"harness_plan", "stand_in"} & in_ui  # the run plan (one option) and the stand-in stay out of it
    assert got["parsed"] == ["shared-lock", "s3", "x"]
