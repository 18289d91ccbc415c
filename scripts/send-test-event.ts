/**
 * npm run send-test-event -- [--url http://localhost:8787] [--provider NAME] [--status PENDING]
 *
 * Sends one signed sample event and prints the answer: the "send test event" button of the
 * provider dashboards, for your own endpoint. The secret (<PROVIDER>_WEBHOOK_SECRETS, first entry),
 * the provider's key encoding where it has one, and WEBHOOK_PATH_TOKEN come from the environment,
 * else .dev.vars; never from flags. The provider's file shapes the event (src/providers/). The
 * default status fires no effect, so it is safe against a deployed receiver.
 */
import { checkTarget, encodingVariables, receiverProblem, secretFrom, toolSender } from "./sim/cli";
import { devVars } from "./sim/dev-vars";
import { envelope, SIMULATED_PREFIX, signDelivery, simProviders } from "./sim/signing";
import { toolArgs } from "./sim/tool";

const PROVIDERS = simProviders();

const USAGE = `Usage: npm run send-test-event -- [--url URL] [--provider NAME] [--status STATUS]

Sends one signed sample event to the receiver and prints its answer.

  --url URL         the receiver (default http://localhost:8787; plain http only to loopback)
  --provider NAME   ${PROVIDERS.join(", ")} (default ${PROVIDERS[0]})
  --status STATUS   the order's status (default PENDING, which fires no effect); SUCCESS fires
                    the settled handler and moves settled totals: ask for it explicitly
  -h, --help        this text

Secrets come from the environment, else .dev.vars (never from flags): <PROVIDER>_WEBHOOK_SECRETS
(the first entry signs), WEBHOOK_PATH_TOKEN (appended to the path when set), and a provider's key
encoding (${encodingVariables().join(", ")}).
The message id and order id start with "${SIMULATED_PREFIX}".`;

const fail = (message: string, code = 2): never => {
	console.error(`send-test-event: ${message}`);
	process.exit(code);
};

const values = toolArgs("send-test-event", USAGE, {
	url: { type: "string", default: "http://localhost:8787" },
	provider: { type: "string", default: PROVIDERS[0] },
	status: { type: "string", default: "PENDING" },
});
const target = checkTarget(values.url as string);
if (!target.ok) fail(target.error);
const url = (target as { url: string }).url;
const status = (values.status as string).trim().toUpperCase();
if (!/^[A-Z_]{1,32}$/.test(status)) fail("--status must be a status name such as PENDING or SUCCESS");
const vars = devVars();
const signer = toolSender(values.provider as string, process.env, vars);
const { provider, secret, keyEncoding } = signer.ok ? signer.sender : fail(signer.error);

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
		...(await signDelivery(provider, secret, body, messageId, Date.now(), 1, keyEncoding)),
	},
	body,
}).catch((err: Error) => fail(`POST ${endpoint} failed: ${err.message}`, 1));
console.log(`POST ${endpoint}${pathToken ? "/<path-token>" : ""}`);
console.log(`messageId ${messageId}, resource ${id}, status ${status}`);
console.log(
	`-> ${res.status} ${res.statusText}${res.headers.get("retry-after") ? ` (Retry-After: ${res.headers.get("retry-after")})` : ""}`,
);
process.exit(res.ok ? 0 : 1);
