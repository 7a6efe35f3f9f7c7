#!/usr/bin/env bash
# Deliveries signed by the senders' own libraries (PyPI standardwebhooks, svix, stripe,
# slack-sdk; npm @octokit/webhooks-methods) sent to examples/webhook-intake, and faultline's
# signatures checked by those libraries; every answer and the ledger's counts checked
# exactly (sdks.py says how). Installs the libraries into target/webhook-sdks/ when missing.
#
#   load-scripts/verifiers/sdks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 load-scripts/verifiers/sdks.py "$@"
