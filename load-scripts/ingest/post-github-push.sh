#!/usr/bin/env bash
# M signed GitHub pushes, each with new commits and its own delivery id: all 201.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-github-push
# Signs every request: one signer process for the copy.
SIGNING=1
EXPECTED="201:-"
COMMITS_PER_PUSH=3

copy_begin "${1:-}"
body=$SCRATCH/body
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    push_body "$body" load/github "$i" "$COMMITS_PER_PUSH"
    signature=$(sign_file "$GITHUB_SECRET" "$body")
    request POST "/api/$INSTANCE_ID/inboxes/$GITHUB_INBOX/commits" \
        -H 'content-type: application/json' -H 'X-GitHub-Event: push' \
        -H "X-GitHub-Delivery: push-$RUNNER_ID-$COPY-$$-$i" \
        -H "X-Hub-Signature-256: sha256=$signature" --data-binary "@$body"
    if [[ $STATUS == 201 ]]; then
        COMMITS_ACCEPTED=$((COMMITS_ACCEPTED + COMMITS_PER_PUSH))
    fi
done
copy_end
