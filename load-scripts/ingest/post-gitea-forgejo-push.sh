#!/usr/bin/env bash
# M signed Gitea and Forgejo pushes, by turns, each with new commits and its own delivery id,
# signed by their documented formula (the hex HMAC-SHA256 of the body, no prefix): all 201.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-gitea-forgejo-push
# Signs every request: one signer process for the copy.
SIGNING=1
EXPECTED="201:-"
COMMITS_PER_PUSH=2

copy_begin "${1:-}"
body=$SCRATCH/body
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    if ((i % 2)); then
        provider=Gitea inbox=$GITEA_INBOX secret=$GITEA_SECRET
    else
        provider=Forgejo inbox=$FORGEJO_INBOX secret=$FORGEJO_SECRET
    fi
    push_body "$body" "load/${provider,,}" "$i" "$COMMITS_PER_PUSH"
    signature=$(sign_file "$secret" "$body")
    request POST "/api/$INSTANCE_ID/inboxes/$inbox/commits" \
        -H 'content-type: application/json' -H "X-$provider-Event: push" \
        -H "X-$provider-Delivery: ${provider,,}-$RUNNER_ID-$COPY-$$-$i" \
        -H "X-$provider-Signature: $signature" --data-binary "@$body"
    if [[ $STATUS == 201 ]]; then
        COMMITS_ACCEPTED=$((COMMITS_ACCEPTED + COMMITS_PER_PUSH))
    fi
done
copy_end
