#!/usr/bin/env bash
# Creates an instance, a digest and one inbox per provider, and writes their ids, the API key
# and the webhook secrets to $FAULTLINE_ENV (load-scripts/ingest/.env, which git ignores).
# Prints the ids only.
source "$(dirname "$0")/lib.sh"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/faultline-setup.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT

# post PATH BODY [curl args...]: the response body; fails unless the status is 201.
post() {
    local path=$1 body=$2 status
    shift 2
    status=$(curl -s -o "$SCRATCH/out" -w '%{http_code}' -X POST \
        --max-time "$CURL_MAX_TIME" --connect-timeout "$CURL_CONNECT_TIMEOUT" \
        -H 'content-type: application/json' --data-binary "$body" "$@" \
        "$FAULTLINE_URL$path") || true
    [[ $status == 201 ]] || die "POST $path answered $status: $(<"$SCRATCH/out")"
    cat "$SCRATCH/out"
}

instance_json=$(post /api/instances '')
INSTANCE_ID=$(json_string id "$instance_json")
API_KEY=$(json_string api_key "$instance_json")
[[ -n $INSTANCE_ID && -n $API_KEY ]] || die "unexpected instance answer"
auth=$(secret_header_file Authorization "Bearer $API_KEY")

digest_json=$(post "/api/$INSTANCE_ID/digests" '{"description":"load test digest"}' -H "@$auth")
DIGEST_ID=$(json_string id "$digest_json")

declare -A INBOX SECRET
for vcs in github gitlab bitbucket gitea forgejo; do
    inbox_json=$(post "/api/$INSTANCE_ID/digests/$DIGEST_ID/inboxes" \
        "{\"vcs\":\"$vcs\",\"name\":\"load $vcs\"}" -H "@$auth")
    INBOX[$vcs]=$(json_string id "$inbox_json")
    SECRET[$vcs]=$(json_string secret "$inbox_json")
    [[ -n ${INBOX[$vcs]} && -n ${SECRET[$vcs]} ]] || die "unexpected inbox answer"
done

umask 077
{
    printf '# written by load-scripts/ingest/setup.sh for %s; holds secrets, never commit it\n' "$FAULTLINE_URL"
    printf 'INSTANCE_ID=%q\nAPI_KEY=%q\nDIGEST_ID=%q\n' "$INSTANCE_ID" "$API_KEY" "$DIGEST_ID"
    for vcs in github gitlab bitbucket gitea forgejo; do
        upper=${vcs^^}
        printf '%s_INBOX=%q\n%s_SECRET=%q\n' "$upper" "${INBOX[$vcs]}" "$upper" "${SECRET[$vcs]}"
    done
} >"$FAULTLINE_ENV"

echo "instance $INSTANCE_ID, digest $DIGEST_ID"
for vcs in github gitlab bitbucket gitea forgejo; do
    echo "  $vcs inbox ${INBOX[$vcs]}"
done
echo "ids, key and secrets written to $FAULTLINE_ENV"
