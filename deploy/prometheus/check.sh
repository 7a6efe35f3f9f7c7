#!/usr/bin/env bash
# The Prometheus rules, checked: the committed rules are what generate.py writes, promtool
# accepts them, every unit test in tests/ passes and every alert has its runbook section in
# docs/alerts.md; then rules generated with other settings pass the tests in tests/variants/
# written for them.
#
# usage: deploy/prometheus/check.sh
# needs: python3 and promtool (Debian package 'prometheus'). It installs nothing.
set -euo pipefail
cd "$(dirname "$0")"

for tool in python3 promtool; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "check: $tool not found; install with: apt-get install python3 prometheus" >&2
        exit 1
    }
done

python3 generate.py --check
promtool check rules rules/*.yml
promtool test rules tests/*.yml

# Every alert's runbook_url points at the section of docs/alerts.md named after the alert.
alerts=$(sed -n 's/^ *- alert: //p' rules/faultline.yml)
for alert in $alerts; do
    grep -qx "### $alert" ../../docs/alerts.md || {
        echo "check: docs/alerts.md has no section '### $alert' for its runbook_url" >&2
        exit 1
    }
done

# The errors page judges routes as the rules do: its objective, windows, fast-burn factor and
# traffic guard (src/export/errors_page/budget.rs) are the rules' defaults, and so is what the
# ledger counts as a failure (src/count/ledger/budget.rs: whether handled 4xx, rejected and
# cancelled requests count, each a constant that its code reads).
python3 - ../../src/export/errors_page/budget.rs ../../src/count/ledger/budget.rs <<'PY'
import re
import sys

import generate

page, ledger = (open(path).read() for path in sys.argv[1:3])
def constant(name):
    return float(re.search(rf"const {name}: \w+ = ([0-9.]+);", page).group(1))
def counted(name):
    found = re.findall(rf"^const {name}: bool = (true|false);$", ledger, re.M)
    if len(found) != 1:
        sys.exit(f"check: src/count/ledger/budget.rs should hold one `const {name}: bool`")
    return found[0] == "true"
def window(name):
    return float(re.search(rf"const {name}: Duration = Duration::from_secs\((\d+)\);", page).group(1))
_, _, factor, long, short, _ = next(a for a in generate.BURN_ALERTS if a[0] == "FaultlineFastBurn")
pairs = [
    ("PAGE_SLO", constant("PAGE_SLO") * 100, generate.SETTINGS["slo"]),
    ("FAST_BURN", constant("FAST_BURN"), factor),
    ("MIN_REQUESTS", constant("MIN_REQUESTS"), generate.SETTINGS["min_requests"]),
    ("LONG", window("LONG"), generate.SECONDS[long]),
    ("SHORT", window("SHORT"), generate.SECONDS[short]),
    ("handled 4xx counted", counted("COUNT_HANDLED_4XX"), generate.SETTINGS["count_handled_4xx"]),
    ("rejected counted", counted("COUNT_REJECTED"), generate.SETTINGS["count_rejected"]),
    ("cancelled counted", counted("COUNT_CANCELLED"), generate.SETTINGS["count_cancelled"]),
]
wrong = [f"{name} {got:g} != the rules' {want:g}" for name, got, want in pairs
         if abs(got - want) > 1e-9]
if wrong:
    sys.exit("check: the errors page judges otherwise than the rules: " + "; ".join(wrong))
PY

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each variant: the test file's name, then the generator's flags it was written for.
variants=(
    "count-handled-4xx --count-handled-4xx"
    "count-rejected --count-rejected"
    "slo-99 --slo 99"
)
for variant in "${variants[@]}"; do
    read -r name flags <<<"$variant"
    # shellcheck disable=SC2086 # the flags are words on purpose
    python3 generate.py --out "$work/$name" $flags
    cp "tests/variants/$name.yml" "$work/$name/"
    promtool check rules "$work/$name/faultline.yml"
    promtool test rules "$work/$name/$name.yml"
done
echo "check: rules current, promtool check and test pass, $(wc -w <<<"$alerts") runbooks found," \
    "the errors page judges as they do, ${#variants[@]} variants pass"
