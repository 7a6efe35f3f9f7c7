#!/usr/bin/env bash
# Deliveries signed by the senders' own libraries, sent over TCP to examples/webhook-intake
# (faultline's verified intake): from PyPI standardwebhooks, svix, stripe and slack-sdk
# (sdk_senders.py; Shopify, Gitea, Forgejo, Bitbucket by their documented formulas, GitLab's
# token as it is), from npm @octokit/webhooks-methods (octokit.mjs). The other way round,
# deliveries signed by faultline's Signer (`webhook-intake sign`) must pass each of those
# libraries' verifiers, and fail them with the body changed. Every answer's status and code
# is checked by the sender scripts; then the ledger's counts on /metrics must equal their
# tallies exactly, answer by answer. Installs the libraries into target/webhook-sdks/
# (a venv, an npm folder) when missing. Stops the server by its PID. Exits non-zero on any
# failure.
#
#   load-scripts/verifiers/sdks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source load-scripts/proc.sh

require sdks.sh node npm curl

sdks=target/webhook-sdks
if ! "$sdks/venv/bin/python" -c 'import standardwebhooks, svix, stripe, slack_sdk' 2>/dev/null; then
    echo "sdks.sh: installing standardwebhooks, svix, stripe, slack-sdk into $sdks/venv"
    python3 -m venv "$sdks/venv"
    "$sdks/venv/bin/pip" install -q standardwebhooks svix stripe slack-sdk
fi
# Major 5: it runs on Node 18, what Debian 12 ships; 6 asks for Node 20.
octokit=$sdks/npm/node_modules/@octokit/webhooks-methods/package.json
if ! grep -q '"version": "5\.' "$octokit" 2>/dev/null; then
    echo "sdks.sh: installing @octokit/webhooks-methods@5 into $sdks/npm"
    mkdir -p "$sdks/npm"
    (cd "$sdks/npm" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
        npm install --silent @octokit/webhooks-methods@5)
fi

# The secrets, as each sender's settings page shows them.
export SECRET_GITHUB="github webhook secret"
export SECRET_GITLAB="glpat-like-token-of-a-hook"
export SECRET_GITLAB_SIGNED="whsec_$(printf 'a gitlab signing token, 32 bytes' | base64)"
export SECRET_BITBUCKET="bitbucket secret"
export SECRET_GITEA="gitea secret"
export SECRET_FORGEJO="forgejo secret"
export SECRET_STANDARD="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
export SECRET_SVIX="whsec_$(printf 'the key of an inbox fed by svix!' | base64)"
export SECRET_STRIPE="whsec_stripe_endpoint_secret"
export SECRET_SLACK="8f742231b10e8888abcd99yyyzzz85a5"
export SECRET_SHOPIFY="shpss_shopify_app_secret"

cargo build -q -p webhook-intake
export WEBHOOK_INTAKE=$PWD/target/debug/webhook-intake
scratch sdks.sh

port=$(free_port)
target/debug/webhook-intake --port "$port" \
    --inbox github=github:"$SECRET_GITHUB" \
    --inbox gitlab=gitlab:"$SECRET_GITLAB" \
    --inbox gitlab-signed=gitlab-signed:"$SECRET_GITLAB_SIGNED" \
    --inbox bitbucket=bitbucket:"$SECRET_BITBUCKET" \
    --inbox gitea=gitea:"$SECRET_GITEA" \
    --inbox forgejo=forgejo:"$SECRET_FORGEJO" \
    --inbox standard=standard-webhooks:"$SECRET_STANDARD" \
    --inbox svix=standard-webhooks:"$SECRET_SVIX" \
    --inbox stripe=stripe:"$SECRET_STRIPE" \
    --inbox slack=slack:"$SECRET_SLACK" \
    --inbox shopify=shopify:"$SECRET_SHOPIFY" \
    >"$work/stdout" 2>"$work/stderr" &
pid=$!
wait_for "$pid" 30 curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" || fail "the server did not start"
addr=127.0.0.1:$port

"$sdks/venv/bin/python" load-scripts/verifiers/sdk_senders.py "$addr" >"$work/python.json" ||
    fail "sdk_senders.py failed"
# An ES module finds its imports beside it: run it from the npm folder.
cp load-scripts/verifiers/octokit.mjs "$sdks/npm/octokit.mjs"
node "$sdks/npm/octokit.mjs" "$addr" >"$work/node.json" || fail "octokit.mjs failed"
python3 load-scripts/verifiers/sdk_ledger.py "http://$addr" "$work/python.json" "$work/node.json" ||
    fail "the ledger does not match the senders' tallies"
echo "sdks.sh: every SDK-signed delivery answered as expected and counted exactly"
