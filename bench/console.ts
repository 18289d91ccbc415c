/**
 * npm run bench:console — the console's cost with 100,000 deliveries in local D1: D1 round trips
 * and statements per page, and milliseconds per page (median and p95 of sequential requests).
 * Seeds through bench/console.worker.ts (bench/wrangler.console.toml), signs in like a browser,
 * then reads each page. Writes bench/results/console.json. Asserts nothing: on a shared 2-core
 * machine the times are for comparison, the round trips are exact.
 */
import path from "node:path";
import { PROVIDER_NAMES } from "../src/providers";
import { migrate, saveResults, startWorker } from "./lib";
import { BENCH_RESOURCE_TYPE, BENCH_SENDER, BENCH_SENDER_VARS } from "./sender";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const CHUNK = 10_000;
const TOKEN = "bench-console-admin-token-0123456789abcdef";

const worker = await startWorker(
	path.join(import.meta.dirname, "console.worker.ts"),
	path.join(import.meta.dirname, "wrangler.console.toml"),
	{ ...BENCH_SENDER_VARS },
);
try {
	await migrate(worker, "/__bench/setup");
	const nowMs = Date.now();
	const seedStart = performance.now();
	for (let from = 1; from <= DELIVERIES; from += CHUNK) {
		const res = await worker.fetch(
			`/__bench/seed?from=${from}&count=${Math.min(CHUNK, DELIVERIES - from + 1)}&now=${nowMs}`,
			{
				method: "POST",
			},
		);
		if (!res.ok) throw new Error(`seed answered ${res.status}: ${await res.text()}`);
	}
	console.log(`seeded ${DELIVERIES} deliveries in ${Math.round(performance.now() - seedStart)} ms`);

	const login = await worker.fetch("/console/login", {
		method: "POST",
		headers: { "content-type": "application/x-www-form-urlencoded" },
		body: new URLSearchParams({ token: TOKEN }).toString(),
		redirect: "manual",
	});
	if (login.status !== 303) throw new Error(`login answered ${login.status}`);
	const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";

	const first = await worker.fetch("/console/deliveries", { headers: { cookie } });
	const cursor = /href="\/console\/deliveries\?cursor=(c\d+)"/.exec(await first.text())?.[1];
	// The seed gives delivery i the sender PROVIDER_NAMES[i % their number] (bench/console.worker.ts).
	const senders = PROVIDER_NAMES.length;
	const pages = [
		"/console",
		"/console/deliveries",
		`/console/deliveries?cursor=${cursor}`,
		`/console/deliveries?provider=${PROVIDER_NAMES[1 % senders]}`,
		"/console/deliveries?status=failed",
		`/console/deliveries?status=enqueued&provider=${PROVIDER_NAMES[2 % senders]}`,
		"/console/deliveries?messageId=bench-54321",
		// A delivery of the first sender (the bench's), and the resource seeded as its.
		`/console/deliveries/${BENCH_SENDER.name}/bench-${54320 - (54320 % senders)}`,
		`/console/resources/${BENCH_SENDER.name}/${BENCH_RESOURCE_TYPE}/ord-100`,
		"/console/effects",
		"/console/reconcile",
		"/console/alerts",
		"/console/rejections",
	];
	await worker.fetch("/__bench/d1");
	const results = [];
	for (const page of pages) {
		const times: number[] = [];
		let bytes = 0;
		for (let i = 0; i < RUNS; i++) {
			const t0 = performance.now();
			const res = await worker.fetch(page, { headers: { cookie }, redirect: "manual" });
			const html = await res.text();
			times.push(performance.now() - t0);
			if (res.status !== 200) throw new Error(`${page} answered ${res.status}`);
			bytes = html.length;
		}
		const d1 = (await (await worker.fetch("/__bench/d1")).json()) as { roundTrips: number; statements: number };
		times.sort((a, b) => a - b);
		results.push({
			page,
			roundTripsPerPage: d1.roundTrips / RUNS,
			statementsPerPage: d1.statements / RUNS,
			medianMs: Number((times[Math.floor(RUNS / 2)] ?? 0).toFixed(1)),
			p95Ms: Number((times[Math.min(RUNS - 1, Math.floor(RUNS * 0.95))] ?? 0).toFixed(1)),
			htmlBytes: bytes,
		});
	}
	console.table(results);
	console.log(`saved ${saveResults("console", { deliveries: DELIVERIES, runs: RUNS, results })}`);
} finally {
	await worker.stop();
}
