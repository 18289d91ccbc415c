/**
 * npm run bench:flood — what a flood of unauthenticated junk costs the receiver, on loopback.
 * 1. D1 round trips caused by JUNK (default 10,000) junk requests alone: random provider names,
 *    unsigned bodies, bad signatures (src/ingress/rejections.ts: no D1 write per rejection).
 * 2. Genuine deliveries' latency (the bench's sender, bench/sender.ts) with and without a flood
 *    running at the same time (goal: p50 under 1.5x the quiet run's).
 * Prints figures and writes bench/results/flood.json; asserts nothing. The flood is bounded in
 * requests and in time. On a 2-core machine the load generator shares the CPU with workerd, so
 * part of any slowdown is the generator's own CPU.
 */
import { drive, RECEIVER_PATH, RECEIVER_VARS, signedBatch } from "./ingress";
import { migrate, saveResults, startWorker } from "./lib";
import { type BenchDelivery, benchDelivery, benchState, WRONG_SECRET } from "./sender";

const JUNK = Number(process.env.BENCH_JUNK ?? 10_000);
const GENUINE = Number(process.env.BENCH_GENUINE ?? 600);
const GENUINE_CONCURRENCY = 4;
const FLOOD_CONCURRENCY = Number(process.env.BENCH_FLOOD_CONCURRENCY ?? 16);
/** Bounds of the flood that runs beside genuine deliveries. */
const FLOOD_MAX_REQUESTS = 200_000;
const FLOOD_MAX_MS = 120_000;

type Junk = { path: string; headers: Record<string, string>; body: string };

/**
 * A delivery of the bench's sender signed with a secret the receiver does not hold: a well-formed
 * signature with a fresh timestamp and a wrong MAC, whatever the sender's scheme. Signed again
 * each second (the timestamp stays fresh however long the flood runs), so the generator spends
 * no HMAC per request.
 */
let wronglySigned: { second: number; delivery: Promise<BenchDelivery> } | null = null;
function wrongMac(): Promise<BenchDelivery> {
	const now = Date.now();
	const second = Math.floor(now / 1000);
	if (wronglySigned?.second !== second) {
		const state = benchState("junk", 1, "PENDING", now, 1);
		wronglySigned = { second, delivery: benchDelivery(`junk-${second}`, state, now, WRONG_SECRET) };
	}
	return wronglySigned.delivery;
}

async function junk(i: number): Promise<Junk> {
	switch (i % 3) {
		case 0:
			return { path: `/webhooks/x${Math.random().toString(36).slice(2, 10)}`, headers: {}, body: "junk" };
		case 1:
			return { path: RECEIVER_PATH, headers: {}, body: "junk" };
		default:
			return { path: RECEIVER_PATH, ...(await wrongMac()) };
	}
}

/** The control: a request to the same Worker that does no work (no body, no MAC, no D1). */
const idle = async (): Promise<Junk> => ({ path: "/healthz", headers: {}, body: "" });

/** Sends junk from `concurrency` loops until `count` requests, `stop()` or `maxMs`. */
async function flood(
	base: string,
	count: number,
	concurrency: number,
	maxMs: number,
	stop = () => false,
	make: (i: number) => Promise<Junk> = junk,
) {
	let sent = 0;
	const statuses: Record<number, number> = {};
	const started = performance.now();
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			while (sent < count && !stop() && performance.now() - started < maxMs) {
				const j = await make(sent++);
				const res = await fetch(
					`${base}${j.path}`,
					j.body === "" ? {} : { method: "POST", headers: j.headers, body: j.body },
				);
				await res.arrayBuffer();
				statuses[res.status] = (statuses[res.status] ?? 0) + 1;
			}
		}),
	);
	const seconds = (performance.now() - started) / 1000;
	return { sent, statuses, seconds: Math.round(seconds * 10) / 10, rps: Math.round(sent / seconds) };
}

const receiver = await startWorker("bench/receiver.worker.ts", "bench/wrangler.receiver.toml", RECEIVER_VARS);
const roundTrips = async () =>
	((await (await receiver.fetch("http://bench/__bench/d1")).json()) as { roundTrips: number }).roundTrips;
try {
	await migrate(receiver, "http://bench/__bench/setup");
	const base = `http://${receiver.address}:${receiver.port}`;
	const url = `${base}${RECEIVER_PATH}`;
	await drive(url, await signedBatch(200), GENUINE_CONCURRENCY);
	await flood(base, 500, FLOOD_CONCURRENCY, FLOOD_MAX_MS);
	await new Promise((r) => setTimeout(r, 3_000));

	// 1. Junk alone: every D1 round trip in this window is the junk's (plus the flushes it causes).
	const before = await roundTrips();
	const junkOnly = await flood(base, JUNK, FLOOD_CONCURRENCY, FLOOD_MAX_MS);
	await new Promise((r) => setTimeout(r, 3_000)); // past the rejection flush interval
	const junkRoundTrips = (await roundTrips()) - before;
	console.log(
		`junk only: ${junkOnly.sent} requests in ${junkOnly.seconds} s (${junkOnly.rps}/s, answers ${JSON.stringify(junkOnly.statuses)}): ${junkRoundTrips} D1 round trips`,
	);

	// 2. Genuine deliveries, quiet, then beside a flood.
	const quiet = await drive(url, await signedBatch(GENUINE), GENUINE_CONCURRENCY);
	let done = false;
	const beside = flood(base, FLOOD_MAX_REQUESTS, FLOOD_CONCURRENCY, FLOOD_MAX_MS, () => done);
	await new Promise((r) => setTimeout(r, 500)); // the flood is running
	const loaded = await drive(url, await signedBatch(GENUINE), GENUINE_CONCURRENCY);
	done = true;
	const floodRun = await beside;
	// 3. The control: the same number of loops sending requests that cost the Worker nothing, so
	// what is left of the slowdown above is what rejections cost, not the shared local runtime.
	done = false;
	const control = flood(base, FLOOD_MAX_REQUESTS, FLOOD_CONCURRENCY, FLOOD_MAX_MS, () => done, idle);
	await new Promise((r) => setTimeout(r, 500));
	const besideIdle = await drive(url, await signedBatch(GENUINE), GENUINE_CONCURRENCY);
	done = true;
	const controlRun = await control;
	const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
	const row = {
		junk: { requests: junkOnly.sent, d1RoundTrips: junkRoundTrips, rps: junkOnly.rps, statuses: junkOnly.statuses },
		genuine: { requests: GENUINE, concurrency: GENUINE_CONCURRENCY, quiet, duringFlood: loaded },
		flood: { concurrency: FLOOD_CONCURRENCY, ...floodRun },
		control: { duringIdleFlood: besideIdle, flood: controlRun },
		p50Ratio: ratio(loaded.p50, quiet.p50),
		p95Ratio: ratio(loaded.p95, quiet.p95),
		controlP50Ratio: ratio(besideIdle.p50, quiet.p50),
		p50RatioVsControl: ratio(loaded.p50, besideIdle.p50),
	};
	console.log(
		`genuine c${GENUINE_CONCURRENCY}, quiet:        p50 ${quiet.p50} ms, p95 ${quiet.p95} ms, ${quiet.rps}/s`,
	);
	console.log(
		`genuine c${GENUINE_CONCURRENCY}, during flood: p50 ${loaded.p50} ms, p95 ${loaded.p95} ms, ${loaded.rps}/s (flood: ${floodRun.sent} junk at ${floodRun.rps}/s, c${FLOOD_CONCURRENCY})`,
	);
	console.log(
		`genuine c${GENUINE_CONCURRENCY}, beside GET /healthz at c${FLOOD_CONCURRENCY} (control): p50 ${besideIdle.p50} ms, p95 ${besideIdle.p95} ms (${controlRun.sent} requests at ${controlRun.rps}/s)`,
	);
	console.log(`ratio during flood / quiet: p50 ${row.p50Ratio}, p95 ${row.p95Ratio} (goal p50 < 1.5)`);
	console.log(`ratio control / quiet: p50 ${row.controlP50Ratio}; flood / control: p50 ${row.p50RatioVsControl}`);
	console.log("saved to %s", saveResults("flood", row));
} finally {
	await receiver.stop();
}
