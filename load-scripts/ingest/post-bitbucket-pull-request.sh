#!/usr/bin/env bash
# M signed Bitbucket `pullrequest:created` events, which the service does not store: all 202
# ignored (a 4xx would count as a failed delivery at the provider). The classic experiment's
# workload.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-bitbucket-pull-request
EXPECTED="202:ignored"

copy_begin "${1:-}"
body=$SCRATCH/body
printf '{"repository":{"full_name":"load/bitbucket"},"pullrequest":{"id":%d,"title":"load test","state":"OPEN"}}' \
    "$COPY" >"$body"
signature=$(sign_file "$BITBUCKET_SECRET" "$body")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request POST "/api/$INSTANCE_ID/inboxes/$BITBUCKET_INBOX/commits" \
        -H 'content-type: application/json' -H 'X-Event-Key: pullrequest:created' \
        -H "X-Request-UUID: pr-$RUNNER_ID-$COPY-$$-$i" \
        -H "X-Hub-Signature: sha256=$signature" --data-binary "@$body"
done
copy_end
