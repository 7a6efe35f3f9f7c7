#!/usr/bin/env bash
# M GitHub pushes signed with the wrong secret: all 401 bad-signature, nothing stored.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-bad-signature
EXPECTED="401:bad-signature"

copy_begin "${1:-}"
body=$SCRATCH/body
printf '{"ref":"refs/heads/main","repository":{"full_name":"load/forged"},"commits":[{"id":"%040d","message":"forged","timestamp":"2026-01-01T00:00:00Z","author":{"name":"Mallory"}}]}' \
    "$COPY" >"$body"
signature=$(sign_file "not the inbox secret" "$body")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request POST "/api/$INSTANCE_ID/inboxes/$GITHUB_INBOX/commits" \
        -H 'content-type: application/json' -H 'X-GitHub-Event: push' \
        -H "X-GitHub-Delivery: forged-$RUNNER_ID-$COPY-$$-$i" \
        -H "X-Hub-Signature-256: sha256=$signature" --data-binary "@$body"
done
copy_end
