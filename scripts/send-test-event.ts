/**
 * npm run send-test-event -- [--url http://localhost:8787] [--provider bloobank] [--status PENDING]
 *
 * Sends one signed sample event and prints the answer: the "send test event" button of the
 * provider dashboards, for your own endpoint. The secret (<PROVIDER>_WEBHOOK_SECRETS, first entry),
 * BLOOBANK_SECRET_ENCODING and WEBHOOK_PATH_TOKEN come from the environment, else .dev.vars; never
 * from flags. The default status fires no effect, so it is safe against a deployed receiver.
 */
import { bloobankEncoding, checkTarget, receiverProblem, secretFrom } from "./sim/cli";
import { devVars } from "./sim/dev-vars";
import { envelope, SIM_PROVIDERS, SIMULATED_PREFIX, type SimProvider, signDelivery } from "./sim/signing";
import { toolArgs } from "./sim/tool";

const USAGE = `Usage: npm run send-test-event -- [--url URL] [--provider NAME] [--status STATUS]

Sends one signed sample event to the receiver and prints its answer.

  --url URL         the receiver (default http://localhost:8787; plain http only to loopback)
  --provider NAME   ${SIM_PROVIDERS.join(", ")} (default bloobank)
  --status STATUS   the order's status (default PENDING, which fires no effect); SUCCESS fires
                    the settled handler and moves settled totals: ask for it explicitly
  -h, --help        this text

Secrets come from the environment, else .dev.vars (never from flags): <PROVIDER>_WEBHOOK_SECRETS
(the first entry signs), BLOOBANK_SECRET_ENCODING, WEBHOOK_PATH_TOKEN (appended to the path when set).
The message id and order id start with "${SIMULATED_PREFIX}".`;

const fail = (message: string, code = 2): never => {
	console.error(`send-test-event: ${message}`);
	process.exit(code);
};

const values = toolArgs("send-test-event", USAGE, {
	url: { type: "string", default: "http://localhost:8787" },
	provider: { type: "string", default: "bloobank" },
	status: { type: "string", default: "PENDING" },
});
const target = checkTarget(values.url as string);
if (!target.ok) fail(target.error);
const url = (target as { url: string }).url;
const provider = values.provider as SimProvider;
if (!SIM_PROVIDERS.includes(provider)) fail(`--provider must be one of ${SIM_PROVIDERS.join(", ")}`);
const status = (values.status as string).trim().toUpperCase();
if (!/^[A-Z_]{1,32}$/.test(status)) fail("--status must be a status name such as PENDING or SUCCESS");
const vars = devVars();
const secretVar = {
	bloobank: "BLOOBANK_WEBHOOK_SECRETS",
	bold: "BOLD_WEBHOOK_SECRETS",
	pazy: "PAZY_WEBHOOK_SECRETS",
	standard: "STANDARD_WEBHOOK_SECRETS",
}[provider];
const secret =
	secretFrom(secretVar, process.env, vars)?.split(",")[0]?.trim() ||
	fail(`no secret: set ${secretVar} in the environment or .dev.vars`);
const encoding =
	bloobankEncoding(process.env, vars) ?? fail("BLOOBANK_SECRET_ENCODING must be utf8 or base64 (as the receiver's)");

const problem = await receiverProblem(url);
if (problem) fail(problem, 1);

const messageId = `${SIMULATED_PREFIX}test_${crypto.randomUUID()}`;
const id = `${SIMULATED_PREFIX}test_${Date.now()}`;
const body = envelope(provider, messageId, {
	id,
	version: 1,
	status,
	amount: 1234,
	currency: "BRL",
	direction: "IN",
	at: Date.now(),
});
const pathToken = secretFrom("WEBHOOK_PATH_TOKEN", process.env, vars);
const endpoint = `${url}/webhooks/${provider}`;
const res = await fetch(pathToken ? `${endpoint}/${pathToken}` : endpoint, {
	method: "POST",
	headers: {
		"content-type": "application/json",
		...(await signDelivery(provider, secret, body, messageId, Date.now(), 1, encoding)),
	},
	body,
}).catch((err: Error) => fail(`POST ${endpoint} failed: ${err.message}`, 1));
console.log(`POST ${endpoint}${pathToken ? "/<path-token>" : ""}`);
console.log(`messageId ${messageId}, resource ${id}, status ${status}`);
console.log(
	`-> ${res.status} ${res.statusText}${res.headers.get("retry-after") ? ` (Retry-After: ${res.headers.get("retry-after")})` : ""}`,
);
process.exit(res.ok ? 0 : 1);
