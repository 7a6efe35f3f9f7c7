#!/usr/bin/env bash
# Instructions per verification of every row of the webhook bench (`cargo bench --features
# webhooks --bench webhooks`), counted by callgrind: each row run N and 2N times in a process
# of its own, the difference divided by N, so that start-up is not counted. The deterministic
# side of that bench's nanoseconds: each row per KiB, and its ratio to the hand-written
# `hmac::Mac::verify_slice` row of the same size. At 1 KiB, two rows more send a whole
# delivery through the layer and the extractor, with the replay guard off and on.
#
#   load-scripts/bench/webhooks-grind.sh          # N = 20
#   load-scripts/bench/webhooks-grind.sh --quick  # N = 2 (CI)
#
# Needs cargo, python3 and valgrind; installs nothing. Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh

require webhooks-grind.sh python3 valgrind
n=20
[[ ${1:-} == --quick ]] && n=2
# No row panics; the figures must not depend on the shell's backtrace setting.
unset RUST_BACKTRACE RUST_LIB_BACKTRACE

cargo bench -q --features webhooks --bench webhooks --no-run 2>/dev/null
bench=$(cargo bench --features webhooks --bench webhooks --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "webhooks" and m.get("executable"):
        print(m["executable"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

instructions() { # ROW KIB N: the instructions of one process running ROW N times
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bench" --grind "$1" "$2" "$3" >/dev/null 2>"$work/err" ||
        { cat "$work/err" >&2; exit 1; }
    sed -n 's/^summary: //p' "$work/out"
}

echo "| row | KiB | instructions per verification | per KiB | × hand_verify_slice |"
echo "|---|---|---|---|---|"
for kib in 1 16 256; do
    base=
    rows="hand_verify_slice github standard_webhooks stripe"
    # A whole delivery through the layer and the extractor, the replay guard off and on.
    [[ $kib == 1 ]] && rows+=" github_extractor github_guarded"
    for row in $rows; do
        once=$(instructions "$row" "$kib" "$n")
        twice=$(instructions "$row" "$kib" $((2 * n)))
        per=$(((twice - once) / n))
        base=${base:-$per}
        python3 -c "print(f'| $row | $kib | {$per:,} | {$per / $kib:,.0f} | {$per / $base:.3f} |')"
    done
done
