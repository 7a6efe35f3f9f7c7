#!/usr/bin/env bash
# M authentic pushes that lack a field we need, from each provider in turn: all 400
# malformed-payload, nothing stored.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-malformed
EXPECTED="400:malformed-payload"

copy_begin "${1:-}"
github=$SCRATCH/github
gitlab=$SCRATCH/gitlab
bitbucket=$SCRATCH/bitbucket
# GitHub: a commit without its id.
printf '{"ref":"refs/heads/main","repository":{"full_name":"load/github"},"commits":[{"message":"m","timestamp":"2026-01-01T00:00:00Z","author":{"name":"n"}}]}' >"$github"
# GitLab: no project.
printf '{"object_kind":"push","ref":"refs/heads/main","commits":[]}' >"$gitlab"
# Bitbucket: a change without its branch name.
printf '{"repository":{"full_name":"load/bitbucket"},"push":{"changes":[{"new":{"type":"branch"},"commits":[]}]}}' >"$bitbucket"
github_signature=$(sign_file "$GITHUB_SECRET" "$github")
bitbucket_signature=$(sign_file "$BITBUCKET_SECRET" "$bitbucket")
gitlab_token=$(secret_header_file X-Gitlab-Token "$GITLAB_SECRET")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    id=malformed-$RUNNER_ID-$COPY-$$-$i
    case $((i % 3)) in
        0) request POST "/api/$INSTANCE_ID/inboxes/$GITHUB_INBOX/commits" \
            -H 'content-type: application/json' -H 'X-GitHub-Event: push' \
            -H "X-GitHub-Delivery: $id" -H "X-Hub-Signature-256: sha256=$github_signature" \
            --data-binary "@$github" ;;
        1) request POST "/api/$INSTANCE_ID/inboxes/$GITLAB_INBOX/commits" \
            -H 'content-type: application/json' -H 'X-Gitlab-Event: Push Hook' \
            -H "Idempotency-Key: $id" -H "@$gitlab_token" --data-binary "@$gitlab" ;;
        2) request POST "/api/$INSTANCE_ID/inboxes/$BITBUCKET_INBOX/commits" \
            -H 'content-type: application/json' -H 'X-Event-Key: repo:push' \
            -H "X-Request-UUID: $id" -H "X-Hub-Signature: sha256=$bitbucket_signature" \
            --data-binary "@$bitbucket" ;;
    esac
done
copy_end
