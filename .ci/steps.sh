# shellcheck shell=bash
# The tiers of .ci/run and their steps, in the order a full run takes them; sourced by
# .ci/run. A step is `step TIER/NAME TITLE COMMAND`: COMMAND is one bash string, run from the
# repository's root with -euo pipefail, and printed as written, so it can be pasted to run
# the step by hand.

STEPS=()
declare -A STEP_TITLE STEP_CMD STEP_TOOK STEP_STATUS
RAN=()

step() {
    STEPS+=("$1")
    STEP_TITLE[$1]=$2
    STEP_CMD[$1]=$3
}

# setup: what CI needs beyond the Rust toolchain (a run with no argument takes it first).
step setup/install "rustup components, Debian packages and cargo-deny, each only when missing" \
    'bash .ci/setup'

# lint: formatting, lints (clippy holds the code to rust-version, 1.86, through
# incompatible_msrv; clippy.toml extends that to the tests), docs, and the dependency policy.
step lint/fmt "formatting" \
    'cargo fmt --all --check'
step lint/clippy "clippy, every target, the default features (and those the examples enable)" \
    'cargo clippy --workspace --all-targets -- -D warnings'
# The three bridges in one run: each alone is checked for the library in feature-matrix, and
# its suite builds with it alone in test/*; one workspace check instead of three saves about
# 50 s a run.
step lint/clippy-bridges "clippy with the bridges: OpenTelemetry, the metrics facade, a failure's span status" \
    'cargo clippy --workspace --all-targets --features faultline/opentelemetry,faultline/metrics,faultline/tracing-opentelemetry -- -D warnings'
step lint/doc "the docs link only to what exists: the library with no feature and with every feature, the service" \
    'RUSTDOCFLAGS="-D warnings" cargo doc -p faultline --no-deps &&
     RUSTDOCFLAGS="-D warnings" cargo doc -p faultline --no-deps --all-features &&
     RUSTDOCFLAGS="-D warnings" cargo doc -p webhook-ingest --no-deps'
# Every shell script (warnings and errors: the infos flag word splitting the scripts mean)
# and every Python file of the repository, found without git (a checkout may have no .git);
# the build directory and any installed packages are left out.
step lint/scripts "the shell scripts (shellcheck) and the Python scripts (pyflakes)" \
    'ours() { find . \( -path ./target -o -path ./.git -o -name node_modules -o -name .venv \) -prune \
                   -o -type f -name "$1" -print0; }
     { ours "*.sh"; printf "%s\0" .ci/run .ci/setup .ci/mutants .ci/tool-tests .ci/with-postgres .ci/without-tools; } |
         xargs -0 shellcheck -x -S warning &&
     ours "*.py" | xargs -0 pyflakes3'
# Advisories are left out: they need the RustSec database, fetched from a host this machine's
# network does not reach.
step lint/deny "cargo deny: licenses, bans and sources of every dependency (deny.toml)" \
    'cargo deny --workspace check --hide-inclusion-graph licenses bans sources'

# deploy: the alerting that ships with the library, checked by Prometheus' and Alertmanager's
# own tools.
step deploy/prometheus "the alert rules regenerate unchanged, promtool checks and tests them" \
    'bash deploy/prometheus/check.sh'
step deploy/alertmanager "amtool checks the routing; a real Alertmanager proves the inhibitions" \
    'bash deploy/alertmanager/check.sh'

# feature-matrix: the library builds with no feature, with each feature alone and with all
# of them, warning-free and clippy-clean (clippy is cargo check and its lints: a feature that
# leaves an item unused is found here). The features are read from Cargo.toml, so a new one
# joins the matrix by itself. A loop rather than cargo-hack: the same checks without one more
# tool to build.
features=$(sed -n '/^\[features\]/,/^\[/{/^[a-z_-]* = \[/{s/ =.*//;p}}' Cargo.toml | grep -vx default)
step feature-matrix/none "no feature" \
    'cargo clippy -p faultline --no-default-features -- -D warnings'
for feature in $features; do
    step "feature-matrix/$feature" "the feature $feature alone" \
        "cargo clippy -p faultline --no-default-features --features $feature -- -D warnings"
done
step feature-matrix/all "every feature" \
    'cargo clippy -p faultline --all-features -- -D warnings'

# test: the README's test command as on a machine with only Rust (.ci/without-tools hides
# every other program and PostgreSQL): it must pass, and the checks that need a tool must say
# they were skipped, or nothing was hidden. Then those checks alone with every tool present
# and required (FAULTLINE_REQUIRE_TOOLS=1, PostgreSQL running), and the feature-gated suites.
# The whole command runs once, not once per setting: a check that needs no tool is the same
# check either way.
step test/workspace "cargo test --workspace (the README's test command) with only Rust on PATH: passes, the tool checks say skipped" \
    'mkdir -p target && touch target/ci-test-began
     .ci/without-tools cargo test --workspace 2>&1 | tee target/ci-test-no-tools.log
     for skip in "skipped: promtool not found" "skipped: PostgreSQL not found"; do
         grep -q "$skip" target/ci-test-no-tools.log ||
             { echo "no \"$skip\" line: the tools were not hidden" >&2; exit 1; }
     done
     # The tests write only to the temporary and build directories: the service binary they
     # start keeps its spool (and the inbox secrets) out of the source tree.
     written=$(find . \( -path ./target -o -path ./.git \) -prune -o -newer target/ci-test-began -print)
     [[ -z $written ]] || { echo "the tests wrote into the source tree:" $written >&2; exit 1; }'
# The suites whose checks need promtool or PostgreSQL: tests/common/tools.rs and the service's
# test_postgres are the only ways a test finds a tool, and these are the files that use them
# (.ci/tool-tests keeps the list honest).
step test/tools "the checks that need promtool or PostgreSQL, every tool present and required" \
    'bash .ci/tool-tests --check &&
     .ci/with-postgres bash .ci/tool-tests --run'
step test/webhooks "the webhook verifiers: the library's unit tests, the suite and the doc examples" \
    'cargo test --features webhooks --lib webhooks &&
     cargo test --features webhooks --test webhooks &&
     cargo test --features webhooks --doc'
step test/opentelemetry "the OpenTelemetry bridge: its suite and doc examples" \
    'cargo test --features opentelemetry --test opentelemetry &&
     cargo test --features opentelemetry --doc'
step test/metrics "the metrics facade bridge: debugging recorder, Prometheus exposition through promtool, doc examples" \
    'cargo test --features metrics --test metrics --test metrics_prometheus &&
     cargo test --features metrics --doc'
step test/span-status "a failure's span status per outcome, through tracing-opentelemetry into the SDK's in-memory exporter" \
    'cargo test --features tracing-opentelemetry --lib export::span &&
     cargo test --features tracing-opentelemetry --test span_status'

# mutants: the mutation script (.ci/mutants) on one small function, so that it cannot rot;
# every module it is run on, and for how long, is in TESTING.md. Incremental builds: each
# mutant is one edit of one crate (CI turns them off for everything else). 120 s on a
# loaded 2-core box: 9 mutants, 6 caught, 3 unviable.
step mutants/read-bounded "cargo-mutants on read_bounded: every mutant caught, or listed with its reason in .ci/mutants-survivors.md" \
    'CARGO_INCREMENTAL=1 .ci/mutants src/middleware/classify.rs -- --re read_bounded -j 1 -C --lib -- middleware::classify'

# loom: every interleaving of the lock-free protocols (src/sync.rs). A target dir of its own:
# --cfg loom rebuilds every dependency. Under --cfg loom the HTTP dev-dependencies drop out
# (Cargo.toml), so this builds the library's own dependencies and loom's, about 60 crates:
# 661 s cold on a loaded 2-core box; the 7 models then run as written and under their 11
# weakenings in about 75 s.
step loom/models "each model as written (passes) and weakened (fails, expected), up to 3 preemptions" \
    'CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --lib loom_'

# bench-smoke: every benchmark once with tiny durations, so the harnesses cannot rot.
step bench-smoke/webhooks "the webhook bench's rows once each, then their instructions under callgrind" \
    'cargo test --features webhooks --bench webhooks &&
     bash load-scripts/bench/webhooks-grind.sh --quick'
step bench-smoke/ledger "the ledger bench's rows once each" \
    'cargo test --features metrics --bench ledger'
step bench-smoke/bench "load-scripts/bench/bench.sh --quick: every benchmark row, tiny durations" \
    'bash load-scripts/bench/bench.sh --quick'
step bench-smoke/ingest "the service beside a hand-written receiver, every acknowledged delivery found in its store" \
    'bash load-scripts/bench/ingest.sh --quick'
step bench-smoke/ingest-postgres "the service on a real PostgreSQL, every acknowledged delivery found in the database" \
    'bash load-scripts/bench/ingest.sh --quick --postgres'
step bench-smoke/ingest-grind "the service's and the hand-written receiver's instructions per delivery under callgrind, every delivery stored" \
    'bash load-scripts/bench/ingest-grind.sh --quick'
step bench-smoke/ledger-grind "the in-process rows' instructions under callgrind" \
    'bash load-scripts/bench/ledger-grind.sh --quick'

# load: the servers under real load from other processes, over TCP on 127.0.0.1.
step load/sdks "deliveries signed by the senders' own libraries (PyPI, npm), answers and counts checked" \
    'bash load-scripts/verifiers/sdks.sh'
step load/keep-alive "behind nginx's upstream keep-alive, forged deliveries refused before their bodies never cost a real one its connection" \
    'bash load-scripts/verifiers/keep-alive.sh'
step load/quickstart "the quick-start example run as a user runs it, answers and counts checked, SIGTERM mid request" \
    'bash load-scripts/quickstart.sh'
step load/webhook "the webhook service under parallel load, every total reconciled" \
    'bash load-scripts/ingest/ci.sh'
step load/durable "under strace, every 201 and 202 queued preceded by an fsync after its request; --sqlite-sync normal caught" \
    'bash load-scripts/ingest/durable.sh'
step load/errors-page "the errors page in headless Chromium, checked through its DOM" \
    'bash load-scripts/errors-page/errors-page.sh'
step load/hostile "thousands of stalled connections closed, pushes served meanwhile, totals reconciled" \
    'bash load-scripts/ingest/hostile.sh'

# fleet: several nodes, a real Prometheus and a real PostgreSQL.
step fleet/fleet "three nodes, a real Prometheus, totals reconciled" \
    'bash load-scripts/fleet/fleet.sh'
step fleet/alerts "the alert rules in a real Prometheus, a burst of failures pages for its route alone" \
    'bash load-scripts/fleet/alerts.sh'
step fleet/pg-fleet "three nodes on a real PostgreSQL, every delivery and ledger reconciled" \
    'bash load-scripts/fleet/pg-fleet.sh'
step fleet/pg-tls "TLS to PostgreSQL: verify-full with the right CA connects, a wrong CA or host is refused" \
    'bash load-scripts/fleet/pg-tls.sh'
step fleet/crash "SIGKILL mid push storm, on SQLite and on PostgreSQL, nothing answered lost" \
    'bash load-scripts/fleet/crash.sh'
step fleet/outage "PostgreSQL stopped mid push storm, a node killed meanwhile, nothing acknowledged lost" \
    'bash load-scripts/fleet/outage.sh'
step fleet/flood "PostgreSQL stopped, made-up large pushes to unknown inboxes, a SIGKILL restart, then real senders acknowledged" \
    'bash load-scripts/fleet/flood.sh'
step fleet/throughput "deliveries stored per second per store at 1, 8 and 64 senders" \
    'bash load-scripts/fleet/throughput.sh'
step fleet/catchup "every node down while GitHub and GitLab send pushes: each asked for once and stored once, on SQLite and a PostgreSQL fleet; each planted bug caught" \
    'bash load-scripts/fleet/catchup.sh &&
     for plant in cursor-not-saved lease-ignored stored-check-skipped; do
         bash load-scripts/fleet/catchup.sh plant=$plant
     done'

# Microseconds since the epoch, from bash's own clock.
now_us() { echo "${EPOCHREALTIME/./}"; }

# Seconds from START (microseconds) to now, one decimal.
since() {
    local us=$(($(now_us) - $1))
    printf '%d.%d' $((us / 1000000)) $((us % 1000000 / 100000))
}

# Runs one step: its title and command, its time, and on failure how to run it alone.
run_step() {
    local id=$1 start rc=0
    printf '\n== %s: %s\n   $ %s\n' "$id" "${STEP_TITLE[$id]}" "${STEP_CMD[$id]}"
    start=$(now_us)
    bash -euo pipefail -c "${STEP_CMD[$id]}" || rc=$?
    RAN+=("$id")
    STEP_TOOK[$id]=$(since "$start")
    if ((rc != 0)); then
        STEP_STATUS[$id]="FAILED (exit $rc)"
        printf '== %s FAILED (exit %d) after %s s. Run it alone with:\n   .ci/run %s\n   or its command: %s\n' \
            "$id" "$rc" "${STEP_TOOK[$id]}" "$id" "${STEP_CMD[$id]}" >&2
        disk_report >&2
        exit "$rc"
    fi
    STEP_STATUS[$id]=ok
    printf '== %s ok in %s s\n' "$id" "${STEP_TOOK[$id]}"
}

# The table of the steps that ran, with their times and the total.
print_times() {
    local id total=0 secs
    ((${#RAN[@]})) || return 0
    printf '\n== step times\n'
    for id in "${RAN[@]}"; do
        secs=${STEP_TOOK[$id]}
        printf '%-32s %8s s  %s\n' "$id" "$secs" "${STEP_STATUS[$id]}"
        total=$((total + 10#${secs/./}))
    done
    printf '%-32s %8s s\n' total "$((total / 10)).$((total % 10))"
    disk_report
}

# The free space where builds and temporary files go, and the build directory's size: a full
# disk shows up as a tool dying oddly (a linker's SIGBUS), so every run ends with this.
disk_report() {
    printf '\n== disk\n'
    df -h . "${TMPDIR:-/tmp}" 2>/dev/null || true
    du -sh target 2>/dev/null || true
}

# Every tier and step, with its command.
list_steps() {
    local id
    for id in "${STEPS[@]}"; do
        printf '%-32s %s\n%-32s $ %s\n' "$id" "${STEP_TITLE[$id]}" "" "${STEP_CMD[$id]}"
    done
}
