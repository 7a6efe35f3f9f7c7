#!/usr/bin/env bash
# The quick-start example as a user runs it: a success, a handled error, a rejection and a
# panic, each answer and the exact counts on /metrics checked, the inbox page, then SIGTERM
# while a request's body is half sent: the server stops accepting, still answers it, and
# exits 0 with every request counted (quickstart.py says how).
#
#   load-scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 load-scripts/quickstart.py "$@"
