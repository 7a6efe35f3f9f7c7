#!/usr/bin/env bash
# TLS from webhook-ingest to a real PostgreSQL with ssl=on: verify-full with the right CA
# connects, a wrong CA or host is refused (pg_tls.py says how).
#
# usage: load-scripts/fleet/pg-tls.sh [--release]
# needs: cargo, python3, openssl, Debian's postgresql package (CI installs it), runuser when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/fleet/pg_tls.py "$@"
