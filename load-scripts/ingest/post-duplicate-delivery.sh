#!/usr/bin/env bash
# M GitLab pushes over M/2 delivery ids, each id sent twice in a row, and the same ids by every
# copy of one runner at the same time: per id exactly one 201, every other copy 200 duplicate.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-duplicate-delivery
EXPECTED="201:- 200:duplicate"
COMMITS_PER_PUSH=2

copy_begin "${1:-}"
# Shared by all copies of one run, so they race for the same ids.
run_number=${RUNNER_NS:-$COPY_START}
token=$(secret_header_file X-Gitlab-Token "$GITLAB_SECRET")
body=$SCRATCH/body
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    n=$(((i + 1) / 2))
    commits=
    for ((j = 1; j <= COMMITS_PER_PUSH; j++)); do
        sha=$(printf '%016x%08x%08x%08x' "$run_number" 0 "$n" "$j")
        commits+="${commits:+,}{\"id\":\"$sha\",\"message\":\"redelivered $n.$j\",\"timestamp\":\"2026-01-01T00:00:00+00:00\",\"author\":{\"name\":\"Load Runner\"}}"
    done
    printf '{"object_kind":"push","ref":"refs/heads/main","project":{"path_with_namespace":"load/gitlab"},"commits":[%s]}' \
        "$commits" >"$body"
    request POST "/api/$INSTANCE_ID/inboxes/$GITLAB_INBOX/commits" \
        -H 'content-type: application/json' -H 'X-Gitlab-Event: Push Hook' \
        -H "Idempotency-Key: dup-$run_number-$n" -H "@$token" --data-binary "@$body"
    if [[ $STATUS == 201 ]]; then
        COMMITS_ACCEPTED=$((COMMITS_ACCEPTED + COMMITS_PER_PUSH))
    fi
done
copy_end
