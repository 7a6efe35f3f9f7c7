#!/usr/bin/env bash
# M new digests in the instance: all 201.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=post-new-digest
EXPECTED="201:-"

copy_begin "${1:-}"
auth=$(secret_header_file Authorization "Bearer $API_KEY")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request POST "/api/$INSTANCE_ID/digests" -H 'content-type: application/json' -H "@$auth" \
        --data-binary "{\"description\":\"load digest $COPY.$i\"}"
done
copy_end
