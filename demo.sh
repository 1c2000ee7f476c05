#!/usr/bin/env bash
# Install the harness into .venv (and dynalite with `npm ci`, when npm is here) and
# run a demo load test on the embedded default (dynalite for DynamoDB,
# SeaweedFS for S3, on loopback; the harness starts and stops them itself; without
# node, or without SeaweedFS's weed, each falls back to moto),
# ending with the path of its report. 90 s: at the demo's ~4 iterations/s a shorter run cannot tell
# a x2 fall from noise (docs/reports.md, "Why is my short run flat?"). Extra arguments go to `harness run`, e.g.
#   bash demo.sh --duration 2m --users 8
set -euo pipefail
cd "$(dirname "$0")"

bash .ci/install  # .venv with the versions in constraints.txt, and dynalite (npm ci); quick when done before
.venv/bin/harness run namespaced --duration 90s "$@"
echo "harness: open it in your browser; in JupyterLab: .venv/bin/harness notebook (first: bash .ci/install notebook)"
