#!/usr/bin/env bash
# Install the harness into .venv and run a short demo load test on the embedded
# default (a moto server on loopback that the harness starts and stops itself),
# ending with the path of its report. Extra arguments go to `harness run`, e.g.
#   bash demo.sh --duration 2m --workers 8
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/harness ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -c constraints.txt -e .  # the versions CI passed with
fi
exec .venv/bin/harness run namespaced --duration 45s "$@"
