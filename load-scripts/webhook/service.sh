# shellcheck shell=bash disable=SC2034
# How the webhook ingestion service is built and where cargo puts it: the one place to change
# when the service moves. Sourced by ci.sh and lib.sh, never run.

# The build; add --release for a release build.
WEBHOOK_INGEST_BUILD=(cargo build -p webhook-ingest)
# The binary, inside the target directory's profile folder (debug/ or release/).
WEBHOOK_INGEST_PATH=webhook-ingest
