/**
 * npm run simulate -- [--url http://localhost:8787] [--provider NAME] [--orders 200]
 *   [--concurrency 8] [--duplicate-rate 0.2] [--seed 1] [--time-scale 1000] [--remote]
 *
 * Plays a provider against a receiver (local, or deployed with --remote), then checks every
 * simulated order in the receiver's admin API. The provider's secret (and key encoding, where it
 * has one), ADMIN_TOKEN and WEBHOOK_PATH_TOKEN come from the environment, else .dev.vars (never
 * from flags), so it works against `npm run dev` as is. The providers come from the registry
 * (src/providers/index.ts); the first is the default.
 * Exits 1 on any mismatch, permanent failure or unreachable receiver, 2 on bad usage.
 */
import { checkTarget, encodingVariables, receiverProblem, secretFrom, toolSender } from "./sim/cli";
import { devVars } from "./sim/dev-vars";
import { SIMULATED_PREFIX, simProviders } from "./sim/signing";
import { type SimReport, simulate } from "./sim/simulate";
import { toolArgs } from "./sim/tool";

const PROVIDERS = simProviders();

const USAGE = `Usage: npm run simulate -- [options]

Plays a provider's deliveries (duplicates, shuffled order, retries on its schedule) against a
receiver, then checks every simulated order through the admin API.

  --url URL               the receiver (default http://localhost:8787)
  --remote                required when --url is not loopback: the run writes hundreds of orders
                          into that receiver's database
  --provider NAME         ${PROVIDERS.join(", ")} (default ${PROVIDERS[0]})
  --orders N              orders to simulate (default 200)
  --concurrency N         deliveries in flight (default 8)
  --duplicate-rate R      share of deliveries sent twice (default 0.2)
  --seed N                random seed (default: the clock)
  --time-scale N          divides the provider's retry delays (default 1000)
  -h, --help              this text

Secrets come from the environment, else .dev.vars (never from flags): <PROVIDER>_WEBHOOK_SECRETS,
ADMIN_TOKEN, WEBHOOK_PATH_TOKEN, and a provider's key encoding (${encodingVariables().join(", ")}).
Every message id and order id starts with "${SIMULATED_PREFIX}".`;

function fail(message: string, code = 2): never {
	console.error(`simulate: ${message}`);
	process.exit(code);
}

function progressBar(done: number, total: number): void {
	if (!process.stderr.isTTY) {
		if (done === total || done % 1000 === 0) process.stderr.write(`${done}/${total} deliveries\n`);
		return;
	}
	const width = 30;
	const filled = Math.round((done / total) * width);
	process.stderr.write(
		`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} deliveries${done === total ? "\n" : ""}`,
	);
}

async function settleByMetrics(url: string, token: string): Promise<void> {
	// The receiver has applied everything it acknowledged once nothing is received or enqueued.
	const deadline = Date.now() + 120_000;
	while (Date.now() < deadline) {
		const res = await fetch(`${url}/admin/metrics`, { headers: { authorization: `Bearer ${token}` } });
		if (!res.ok) fail(`admin API answered ${res.status} (is ADMIN_TOKEN right?)`);
		const m = (await res.json()) as { oldestUnprocessedAgeSeconds: number | null };
		if (m.oldestUnprocessedAgeSeconds === null) return;
		await new Promise((r) => setTimeout(r, 500));
	}
	console.error("simulate: the receiver still had unapplied deliveries after 120 s");
}

export function printReport(r: SimReport): void {
	console.log(`provider            ${r.provider}`);
	console.log(`orders              ${r.orders}`);
	console.log(`deliveries          ${r.deliveries} (+${r.duplicatesSent} duplicates)`);
	console.log(`attempts sent       ${r.attempts}`);
	console.log(`acked               ${r.acked}`);
	console.log(`retried             ${r.retried}`);
	console.log(`permanent failures  ${r.permanentFailures}`);
	console.log(
		`answers             ${Object.entries(r.statusCounts)
			.map(([s, n]) => `${s}: ${n}`)
			.join(", ")}`,
	);
	if (!r.verified) console.log("mismatches          not checked (no admin token)");
	else console.log(`mismatches          ${r.mismatches.length}`);
	for (const m of r.mismatches.slice(0, 20))
		console.log(`  ${m.id}: expected ${JSON.stringify(m.expected)}, got ${JSON.stringify(m.actual)}`);
}

const values = toolArgs("simulate", USAGE, {
	url: { type: "string", default: "http://localhost:8787" },
	remote: { type: "boolean", default: false },
	provider: { type: "string", default: PROVIDERS[0] },
	orders: { type: "string", default: "200" },
	concurrency: { type: "string", default: "8" },
	"duplicate-rate": { type: "string", default: "0.2" },
	seed: { type: "string", default: String(Date.now() % 1_000_000) },
	"time-scale": { type: "string", default: "1000" },
});

const vars = devVars();
const signer = toolSender(values.provider as string, process.env, vars);
const { provider, secret, keyEncoding } = signer.ok ? signer.sender : fail(signer.error);
const adminToken = secretFrom("ADMIN_TOKEN", process.env, vars);
const num = (name: string, v: string | boolean | undefined, min: number) => {
	const n = Number(v);
	return Number.isFinite(n) && n >= min ? n : fail(`--${name} must be a number >= ${min}`);
};
const target = checkTarget(values.url as string);
if (!target.ok) fail(target.error);
if (!target.loopback && values.remote !== true)
	fail(
		`--url ${target.url} is not loopback: the simulator writes hundreds of orders into that receiver; pass --remote if that is what you want`,
	);
const url = target.url;
const options = {
	url,
	provider,
	secret,
	adminToken,
	orders: num("orders", values.orders, 1),
	concurrency: num("concurrency", values.concurrency, 1),
	duplicateRate: num("duplicate-rate", values["duplicate-rate"], 0),
	seed: num("seed", values.seed, 0),
	timeScale: num("time-scale", values["time-scale"], 1),
	pathToken: secretFrom("WEBHOOK_PATH_TOKEN", process.env, vars),
	keyEncoding,
};

const problem = await receiverProblem(url);
if (problem) fail(problem, 1);

const started = Date.now();
const report = await simulate(options, {
	fetch: (req) => fetch(req),
	sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
	now: () => Date.now(),
	onProgress: progressBar,
	settle: () => (adminToken ? settleByMetrics(url, adminToken) : Promise.resolve()),
});
printReport(report);
console.log(`elapsed             ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${options.seed})`);
process.exit(report.mismatches.length > 0 || report.permanentFailures > 0 || !report.verified ? 1 : 0);
