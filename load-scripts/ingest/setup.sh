#!/usr/bin/env bash
# Creates an instance, a digest and one inbox per provider (harness/ingest.py), and writes
# their ids, the API key and the webhook secrets to $FAULTLINE_ENV (load-scripts/ingest/.env,
# which git ignores). Prints the ids only.
source "$(dirname "$0")/lib.sh"

harness setup "$FAULTLINE_URL" "$FAULTLINE_ENV"
