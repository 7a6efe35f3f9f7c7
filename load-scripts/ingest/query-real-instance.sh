#!/usr/bin/env bash
# M look-ups of the instance with its key: all 200.
source "$(dirname "$0")/lib.sh"
SCRIPT_NAME=query-real-instance
EXPECTED="200:-"

copy_begin "${1:-}"
auth=$(secret_header_file Authorization "Bearer $API_KEY")
for ((i = 1; i <= REQUESTS; i++)); do
    in_time || break
    request GET "/api/instances/$INSTANCE_ID" -H "@$auth"
done
copy_end
