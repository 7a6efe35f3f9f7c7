// GitHub deliveries signed by @octokit/webhooks-methods, GitHub's own JavaScript signer,
// sent to webhook-intake: a signed one (200), the same with its body changed by one byte
// and with another inbox's secret (401 webhook-signature-mismatch). octokit's verify checks
// each signature first. One more signed by faultline's Signer (`webhook-intake sign`): it
// must pass octokit's verify, fail it with the body changed, carry every header GitHub sends
// (the event and the delivery id among them, which octokit's receiver requires), and be kept
// (200), sent with the Signer's headers alone. Prints the tally of answers by code as JSON.
//
//     node octokit.mjs ADDR     (SECRET_GITHUB and WEBHOOK_INTAKE in the environment, as
//                                sdks.py sets them)
import { execFileSync } from "node:child_process";
import { sign, verify } from "@octokit/webhooks-methods";

const addr = process.argv[2];
const secret = process.env.SECRET_GITHUB;
const body = JSON.stringify({ ref: "refs/heads/main", commits: [{ id: "1a2b3c" }] });
const tampered = body.replace("main", "maim");
const rounds = 4;

async function send(headers, payload, status, code, event = { "x-github-event": "push" }) {
  const response = await fetch(`http://${addr}/hooks/github`, {
    method: "POST",
    headers: { "content-type": "application/json", ...event, ...headers },
    body: payload,
  });
  const answer = await response.json();
  if (response.status !== status || (code && answer.code !== code)) {
    throw new Error(`github: ${response.status} ${JSON.stringify(answer)}, expected ${status} ${code}`);
  }
  return code ?? "ok";
}

const signature = await sign(secret, body);
if (!(await verify(secret, body, signature))) throw new Error("octokit refuses its own signature");
const other = await sign("a secret of another inbox", body);
const oursHeaders = JSON.parse(
  execFileSync(process.env.WEBHOOK_INTAKE, ["sign", "github", secret, "--event", "push"], { input: body }),
);
const ours = oursHeaders["x-hub-signature-256"];
if (!(await verify(secret, body, ours))) throw new Error("octokit refuses faultline's signature");
if (await verify(secret, tampered, ours)) throw new Error("octokit passes a changed body");
// What octokit's receiver (verifyAndReceive, createNodeMiddleware) requires of a delivery.
for (const header of ["x-github-event", "x-github-delivery", "x-hub-signature-256"]) {
  if (!oursHeaders[header]) throw new Error(`faultline's Signer sends no ${header}`);
}
if (oursHeaders["x-github-event"] !== "push") throw new Error("faultline's Signer names another event");
const tally = {};
const sends = [];
for (let round = 0; round < rounds; round++) {
  const delivery = { "x-github-delivery": `72d3162e-cc78-11e3-81ab-4c9367dc09${round}0` };
  sends.push(send({ ...delivery, "x-hub-signature-256": signature }, body, 200));
  sends.push(send({ "x-hub-signature-256": signature }, tampered, 401, "webhook-signature-mismatch"));
  sends.push(send({ "x-hub-signature-256": other }, body, 401, "webhook-signature-mismatch"));
  sends.push(send(oursHeaders, body, 200, undefined, {}));
}
for (const code of await Promise.all(sends)) tally[code] = (tally[code] ?? 0) + 1;
console.log(JSON.stringify(tally));
