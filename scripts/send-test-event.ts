/**
 * npm run send-test-event -- [--url http://localhost:8787] [--provider bloobank] [--status SUCCESS]
 *
 * Sends one signed sample event and prints the answer: the "send test event" button of the
 * provider dashboards, for your own endpoint. The secret (<PROVIDER>_WEBHOOK_SECRETS, first entry)
 * and WEBHOOK_PATH_TOKEN come from the environment, else .dev.vars; never from flags.
 */
import { parseArgs } from "node:util";
import { checkTarget, secretFlagError, secretFrom } from "./sim/cli";
import { devVars } from "./sim/dev-vars";
import { envelope, SIM_PROVIDERS, type SimProvider, signDelivery } from "./sim/signing";

const flagError = secretFlagError(process.argv.slice(2));
if (flagError) {
	console.error(`send-test-event: ${flagError}`);
	process.exit(2);
}
const { values } = parseArgs({
	options: {
		url: { type: "string", default: "http://localhost:8787" },
		provider: { type: "string", default: "bloobank" },
		status: { type: "string", default: "SUCCESS" },
	},
});
const target = checkTarget(values.url as string);
if (!target.ok) {
	console.error(`send-test-event: ${target.error}`);
	process.exit(2);
}
const provider = values.provider as SimProvider;
if (!SIM_PROVIDERS.includes(provider)) {
	console.error(`send-test-event: --provider must be one of ${SIM_PROVIDERS.join(", ")}`);
	process.exit(2);
}
const vars = devVars();
const secretVar = {
	bloobank: "BLOOBANK_WEBHOOK_SECRETS",
	bold: "BOLD_WEBHOOK_SECRETS",
	pazy: "PAZY_WEBHOOK_SECRETS",
	standard: "STANDARD_WEBHOOK_SECRETS",
}[provider];
const secret = secretFrom(secretVar, process.env, vars)?.split(",")[0]?.trim();
if (!secret) {
	console.error(`send-test-event: no secret: set ${secretVar} in the environment or .dev.vars`);
	process.exit(2);
}
const messageId = `test-${crypto.randomUUID()}`;
const id = `ord_test_${Date.now()}`;
const body = envelope(provider, messageId, {
	id,
	version: 1,
	status: (values.status as string).toUpperCase(),
	amount: 1234,
	currency: "BRL",
	direction: "IN",
	at: Date.now(),
});
const pathToken = secretFrom("WEBHOOK_PATH_TOKEN", process.env, vars);
const url = `${target.url}/webhooks/${provider}${pathToken ? `/${pathToken}` : ""}`;
const res = await fetch(url, {
	method: "POST",
	headers: {
		"content-type": "application/json",
		...(await signDelivery(provider, secret, body, messageId, Date.now())),
	},
	body,
});
console.log(`POST ${url.replace(pathToken ?? "\u0000", "<path-token>")}`);
console.log(`messageId ${messageId}, resource ${id}`);
console.log(
	`-> ${res.status} ${res.statusText}${res.headers.get("retry-after") ? ` (Retry-After: ${res.headers.get("retry-after")})` : ""}`,
);
process.exit(res.ok ? 0 : 1);
