#!/usr/bin/env bash
# The errors page in a real browser: starts the failure lab on a free port of
# 127.0.0.1, sends a bounded load of every failure kind, opens /errors/inbox in headless
# Chromium and checks through the DOM that its rows, counts and codes match /errors, that the
# budget section's requests, failures, ratios and burn rates per route are those of the load
# sent, fastest burning first, that the filters hide what they should, and that the injected
# script in /hostile's message did not run; then measures the page at 1,300 px over the
# DevTools protocol: it must not scroll sideways, although /hostile's message holds a token
# wider than the screen. Saves screenshots under target/errors-page/. Stops the lab and Chromium by
# their PIDs. Exits non-zero on any failure.
#
#   load-scripts/errors-page/errors-page.sh            # debug build: reuses what `cargo test` compiled
#   ERRORS_PAGE_PROFILE=release load-scripts/errors-page/errors-page.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh

require errors-page.sh chromium

profile=${ERRORS_PAGE_PROFILE:-debug}
flags=()
[[ $profile == release ]] && flags=(--release)
cargo build -q "${flags[@]}" -p failure-lab
exec python3 load-scripts/errors-page/errors_page.py --lab "target/$profile/failure-lab" --out target/errors-page
