#!/usr/bin/env bash
# Install the harness into .venv (and dynalite with `npm ci`, when npm is here) and
# run a short demo load test on the embedded default (dynalite for DynamoDB,
# SeaweedFS for S3, on loopback; the harness starts and stops them itself; without
# node, or without SeaweedFS's weed, each falls back to moto),
# ending with the path of its report. Extra arguments go to `harness run`, e.g.
#   bash demo.sh --duration 2m --workers 8
set -euo pipefail
cd "$(dirname "$0")"

bash .ci/install  # .venv with the versions in constraints.txt, and dynalite (npm ci); quick when done before
exec .venv/bin/harness run namespaced --duration 45s "$@"
