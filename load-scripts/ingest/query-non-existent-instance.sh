#!/usr/bin/env bash
# M look-ups of instances that do not exist: all 404 instance-not-found.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=query-non-existent-instance
EXPECTED="404:instance-not-found"

copy_begin "${1:-}"
auth=$(secret_header_file Authorization "Bearer $API_KEY")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request GET "/api/instances/in_missing$COPY$i" -H "@$auth"
done
copy_end
