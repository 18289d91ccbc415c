/**
 * npm run bench:reconcile — reconcile N seeded orders (default 10,000 and 100,000) against the fake
 * of the reconciled sender's API (fixtures/fake-api.ts) over loopback HTTP, once over one D1 database and once over three shards
 * (DB_SHARDS=DB,DB_1,DB_2, src/db/shards.ts), with the local orders placed in the shards by the
 * receiver's own placement. Prints, per run: orders per second, pages, invocations, the most D1
 * round trips and statements any one invocation made (in all and per shard), subrequests, wall and
 * CPU time per invocation, and the reconcile worker's peak memory; then the figures of a million
 * orders a day against the Workers limits. A control run (same requests and queries, no orders)
 * shows what local workerd's memory grows by on its own. Asserts nothing.
 *
 * BENCH_ORDERS=10000,100000 and BENCH_SHARDS=1,3 choose the runs.
 */
import { BASE_URL, fakeApiVars } from "../fixtures/fake-api";
import { reconciledProvider } from "../src/providers";
import { saveChart } from "./chart";
import { cpuSeconds } from "./ingress";
import { currentRssMiB, migrate, peakRssMiB, pidsOf, saveResults, startWorker, workerdPids } from "./lib";
import { expectedDrift } from "./reconcile-orders";

const SENDER = reconciledProvider();
if (!SENDER) throw new Error("no sender in src/providers/ declares an api to reconcile");
const SIZES = (process.env.BENCH_ORDERS ?? "10000,100000").split(",").map(Number);
const SHARD_COUNTS = (process.env.BENCH_SHARDS ?? "1,3").split(",").map(Number);
const SHARD_BINDINGS = ["DB", "DB_1", "DB_2"]; // bench/wrangler.reconcile.toml
if (SHARD_COUNTS.some((s) => !(s >= 1 && s <= SHARD_BINDINGS.length))) {
	throw new Error(`BENCH_SHARDS: each count between 1 and ${SHARD_BINDINGS.length}`);
}

/** Workers and D1 limits per invocation (developers.cloudflare.com/workers/platform/limits, /d1/platform/limits). */
const LIMITS = {
	d1QueriesFree: 50,
	d1QueriesPaid: 1_000,
	subrequestsFree: 50,
	subrequestsPaid: 10_000,
	cpuMsFree: 10,
	cpuMsPaidDefault: 30_000,
	memoryMiB: 128,
	/** A queue consumer invocation's wall time. */
	wallMinutes: 15,
};
const DAY_ORDERS = 1_000_000;

interface Report {
	pages: number;
	orders_seen: number;
	repaired: number;
	status: string;
}

interface ShardCounts {
	roundTrips: number;
	statements: number;
}

interface JobResult {
	jobs: unknown[];
	d1: number;
	statements: number;
	perShard: ShardCounts[];
	subrequests: number;
}

interface Plan {
	runId: string;
	jobs: unknown[];
	/** src/reconcile/window.ts MAX_PAGES_PER_INVOCATION and src/reconcile/client.ts PAGE_SIZE, from the worker. */
	pagesPerInvocation: number;
	pageSize: number;
}
let paging = { pagesPerInvocation: 10, pageSize: 100 };

interface RunRow {
	orders: number;
	shards: number;
	status: string;
	ordersPerSecond: number;
	pages: number;
	invocations: number;
	repaired: number;
	expectedRepaired: number;
	ordersPerShard: number[];
	localRowsPerShard: number[];
	maxD1RoundTripsPerInvocation: number;
	maxD1StatementsPerInvocation: number;
	maxPerShardPerInvocation: ShardCounts[];
	maxSubrequestsPerInvocation: number;
	wallMsPerInvocation: { mean: number; max: number };
	/** utime + stime of the reconcile worker's workerd processes over the run, per invocation. */
	cpuMsPerInvocation: number | null;
	peakRssMiB: number | null;
	rssEvery10InvocationsMiB: (number | null)[];
}

// Stated up front: ~1,000-4,000 orders/s measured on a 2-core machine (README "Benchmarks"), plus
// seeding, a control run and about 10 s of Worker start-up per run.
const ORDERS_PER_SECOND = 1_000;
const expectedS = Math.ceil(
	(SHARD_COUNTS.length * SIZES.reduce((a, n) => a + n, 0) + Math.max(...SIZES) / 2) / ORDERS_PER_SECOND +
		10 * (SIZES.length * SHARD_COUNTS.length + 1),
);
process.stderr.write(
	`reconcile: ${SIZES.map((n) => n.toLocaleString("en-US")).join(" and ")} orders over ${SHARD_COUNTS.join(" and ")} shard(s), then a control run: expect up to about ${expectedS} s (at ${ORDERS_PER_SECOND} orders/s)\n`,
);
const benchStarted = performance.now();
const progress = (line: string, done = false) => {
	const elapsed = Math.round((performance.now() - benchStarted) / 1000);
	const text = `  ${line} (${elapsed} s of about ${expectedS} s)`;
	if (process.stderr.isTTY) process.stderr.write(`\r${text}\x1b[K${done ? "\n" : ""}`);
	else if (done) process.stderr.write(`${text}\n`);
};

const api = await startWorker("bench/fake-api.worker.ts", "bench/wrangler.fake-api.toml");
// The fake API's own processes (its second one appears at its first request), so no reconcile
// worker's figures include them.
const apiPids = await pidsOf(api, new Set());
const results: Record<string, unknown>[] = [];

/**
 * A fresh reconcile worker over `shards` shards, every binding migrated, pointed at the fake API,
 * with the workerd processes it runs in (bench/lib.ts pidsOf: only the ones this run started).
 */
async function startReconcileWorker(shards: number) {
	const before = new Set([...workerdPids(), ...apiPids]);
	const worker = await startWorker("bench/reconcile.worker.ts", "bench/wrangler.reconcile.toml", {
		...fakeApiVars(`http://${api.address}:${api.port}${new URL(BASE_URL).pathname}`),
		RECONCILE_LOOKBACK_HOURS: "6",
		DB_SHARDS: SHARD_BINDINGS.slice(0, shards).join(","),
	});
	const pids = await pidsOf(worker, before);
	// Every shard is migrated the same way, whether this run uses it or not, as npm run dev does.
	for (const db of SHARD_BINDINGS) await migrate(worker, `http://bench/setup?db=${db}`);
	return { worker, pids };
}

const fmt = (n: number) => n.toLocaleString("en-US");

try {
	for (const n of SIZES) {
		for (const shards of SHARD_COUNTS) {
			const label = `${fmt(n)} orders, ${shards} shard${shards === 1 ? "" : "s"}`;
			const { worker, pids: mine } = await startReconcileWorker(shards);
			try {
				progress(`${label}: seeding`, true);
				await api.fetch(`http://bench/seed?n=${n}`);
				const seeded = (await (
					await worker.fetch(`http://bench/seed-local?n=${n}&provider=${SENDER.name}&type=${SENDER.api.type}`, {
						method: "POST",
					})
				).json()) as {
					placed: number[];
					rows: number[];
				};
				const started = performance.now();
				const plan = (await (await worker.fetch("http://bench/plan")).json()) as Plan;
				paging = { pagesPerInvocation: plan.pagesPerInvocation, pageSize: plan.pageSize };
				const queue = [...plan.jobs];
				const rssCurve: (number | null)[] = [];
				let invocations = 0;
				let maxD1 = 0;
				let maxStatements = 0;
				let maxSubrequests = 0;
				const maxPerShard: ShardCounts[] = Array.from({ length: shards }, () => ({ roundTrips: 0, statements: 0 }));
				let wallTotal = 0;
				let wallMax = 0;
				const cpu0 = cpuSeconds(mine);
				while (queue.length > 0) {
					const t0 = performance.now();
					const res = await worker.fetch("http://bench/job", { method: "POST", body: JSON.stringify(queue.shift()) });
					const j = (await res.json()) as JobResult;
					const wall = performance.now() - t0;
					wallTotal += wall;
					wallMax = Math.max(wallMax, wall);
					queue.push(...j.jobs);
					invocations++;
					if (invocations % 10 === 0) {
						rssCurve.push(currentRssMiB(mine));
						progress(`${label}: ${invocations} invocations, ${queue.length} jobs queued`);
					}
					maxD1 = Math.max(maxD1, j.d1);
					maxStatements = Math.max(maxStatements, j.statements);
					maxSubrequests = Math.max(maxSubrequests, j.subrequests);
					j.perShard.forEach((s, i) => {
						const m = maxPerShard[i];
						if (!m) return;
						m.roundTrips = Math.max(m.roundTrips, s.roundTrips);
						m.statements = Math.max(m.statements, s.statements);
					});
				}
				const cpu1 = cpuSeconds(mine);
				const elapsedMs = performance.now() - started;
				progress(`${label}: done, ${invocations} invocations`, true);
				const r = (await (await worker.fetch(`http://bench/report?run=${plan.runId}`)).json()) as Report;
				const row: RunRow = {
					orders: n,
					shards,
					status: r.status,
					ordersPerSecond: Math.round(r.orders_seen / (elapsedMs / 1000)),
					pages: r.pages,
					invocations,
					repaired: r.repaired,
					expectedRepaired: expectedDrift(n),
					ordersPerShard: seeded.placed,
					localRowsPerShard: seeded.rows,
					maxD1RoundTripsPerInvocation: maxD1,
					maxD1StatementsPerInvocation: maxStatements,
					maxPerShardPerInvocation: maxPerShard,
					maxSubrequestsPerInvocation: maxSubrequests,
					wallMsPerInvocation: { mean: Math.round(wallTotal / invocations), max: Math.round(wallMax) },
					cpuMsPerInvocation: cpu0 !== null && cpu1 !== null ? Math.round(((cpu1 - cpu0) * 1000) / invocations) : null,
					peakRssMiB: peakRssMiB(mine),
					rssEvery10InvocationsMiB: rssCurve,
				};
				results.push(row as unknown as Record<string, unknown>);
				console.log(
					"reconcile %s: %s, %d orders/s, %d pages in %d invocations, repaired %d (expected %d)",
					label,
					row.status,
					row.ordersPerSecond,
					row.pages,
					row.invocations,
					row.repaired,
					row.expectedRepaired,
				);
				console.log(
					"  orders per shard %s (held locally %s)",
					row.ordersPerShard.map(fmt).join(" / "),
					row.localRowsPerShard.map(fmt).join(" / "),
				);
				console.log(
					"  max per invocation: %d D1 round trips (%d statements), per shard %s; %d subrequests",
					row.maxD1RoundTripsPerInvocation,
					row.maxD1StatementsPerInvocation,
					row.maxPerShardPerInvocation
						.map((s, i) => `${SHARD_BINDINGS[i]} ${s.roundTrips} (${s.statements})`)
						.join(", "),
					row.maxSubrequestsPerInvocation,
				);
				console.log(
					"  per invocation: wall %d ms mean, %d ms max; workerd CPU %s ms mean; workerd peak RSS %s MiB",
					row.wallMsPerInvocation.mean,
					row.wallMsPerInvocation.max,
					row.cpuMsPerInvocation ?? "n/a",
					row.peakRssMiB ?? "n/a",
				);
			} finally {
				await worker.stop();
			}
		}
	}
	// Control per shard count: a fresh worker making the same number of requests, D1 round trips
	// and subrequests as that count's largest run, with no orders. workerd's RSS in local mode grows
	// per request and per query (seen with no-op requests), and its CPU holds the runtime's and local
	// D1's, so the run's figures mean something only next to these.
	const controls = new Map<number, Control>();
	for (const shards of SHARD_COUNTS) {
		const largest = largestRun(results, shards);
		if (largest) controls.set(shards, await runControl(largest));
	}
	printDay(results, controls);
	console.log("  saved to %s", saveResults("reconcile", results));
	console.log("  chart   %s", saveChart("reconcile", results));
} finally {
	await api.stop();
}

interface Control {
	invocations: number;
	peakRssMiB: number | null;
	cpuMsPerInvocation: number | null;
}

function largestRun(rows: Record<string, unknown>[], shards: number): RunRow | undefined {
	return (rows.filter((r) => r.orders !== undefined && r.shards === shards) as unknown as RunRow[]).sort(
		(a, b) => b.orders - a.orders,
	)[0];
}

async function runControl(run: RunRow): Promise<Control> {
	const { worker, pids: mine } = await startReconcileWorker(run.shards);
	try {
		const curve: (number | null)[] = [];
		const cpu0 = cpuSeconds(mine);
		for (let i = 1; i <= run.invocations; i++) {
			await worker.fetch(
				`http://bench/control?d1=${run.maxD1RoundTripsPerInvocation}&subrequests=${Math.min(10, run.maxSubrequestsPerInvocation)}`,
			);
			if (i % 10 === 0 || i === run.invocations) {
				if (i % 10 === 0) curve.push(currentRssMiB(mine));
				progress(`control for ${run.shards} shard(s): ${i}/${run.invocations} invocations`, i === run.invocations);
			}
		}
		const cpu1 = cpuSeconds(mine);
		const control: Control = {
			invocations: run.invocations,
			peakRssMiB: peakRssMiB(mine),
			cpuMsPerInvocation: cpu0 !== null && cpu1 !== null ? Math.round(((cpu1 - cpu0) * 1000) / run.invocations) : null,
		};
		results.push({
			control: `same requests, ${run.maxD1RoundTripsPerInvocation} D1 round trips and 10 subrequests each, no orders`,
			shards: run.shards,
			...control,
			rssEvery10InvocationsMiB: curve,
		});
		console.log(
			"control for %d shard(s), no orders, %d invocations: workerd peak RSS %s MiB, workerd CPU %s ms per invocation",
			run.shards,
			run.invocations,
			control.peakRssMiB ?? "n/a",
			control.cpuMsPerInvocation ?? "n/a",
		);
		return control;
	} finally {
		await worker.stop();
	}
}

/**
 * A million orders a day, from the largest run of each shard count. Each invocation lists at most
 * MAX_PAGES_PER_INVOCATION pages of PAGE_SIZE orders (src/reconcile/) whatever the day's volume, so the
 * per-invocation figures are the day's; only the number of invocations scales.
 */
function printDay(rows: Record<string, unknown>[], controls: Map<number, Control>): void {
	const { pagesPerInvocation, pageSize } = paging;
	const perInvocation = pagesPerInvocation * pageSize;
	console.log(
		"\n%s orders a day: %s pages, at least %s invocations with one shard (%d pages of %d orders each; 10 / S pages with S shards, src/reconcile/window.ts pagesPerInvocation); per invocation, measured:",
		fmt(DAY_ORDERS),
		fmt(DAY_ORDERS / pageSize),
		fmt(DAY_ORDERS / perInvocation),
		pagesPerInvocation,
		pageSize,
	);
	for (const shards of SHARD_COUNTS) {
		const row = largestRun(rows, shards);
		if (!row) continue;
		const control = controls.get(shards);
		const added =
			row.cpuMsPerInvocation !== null && control?.cpuMsPerInvocation != null
				? row.cpuMsPerInvocation - control.cpuMsPerInvocation
				: null;
		const within = (v: number, limit: number) => `${v <= limit ? "within" : "OVER"} ${fmt(limit)}`;
		console.log(
			"  %d shard%s (run of %s orders, %s invocations; a day is %s times as many):",
			shards,
			shards === 1 ? "" : "s",
			fmt(row.orders),
			fmt(row.invocations),
			fmt(Math.round((DAY_ORDERS / row.orders) * 10) / 10),
		);
		console.log(
			"    D1 queries: %d statements in %d round trips (Free: %s, Paid: %s)",
			row.maxD1StatementsPerInvocation,
			row.maxD1RoundTripsPerInvocation,
			within(row.maxD1StatementsPerInvocation, LIMITS.d1QueriesFree),
			within(row.maxD1StatementsPerInvocation, LIMITS.d1QueriesPaid),
		);
		console.log(
			"    per shard: %s (the limit is per invocation, over every shard together)",
			row.maxPerShardPerInvocation
				.map((s, i) => `${SHARD_BINDINGS[i]} ${s.statements} statements in ${s.roundTrips} round trips`)
				.join("; "),
		);
		console.log(
			"    subrequests: %d (Free: %s, Paid: %s)",
			row.maxSubrequestsPerInvocation,
			within(row.maxSubrequestsPerInvocation, LIMITS.subrequestsFree),
			within(row.maxSubrequestsPerInvocation, LIMITS.subrequestsPaid),
		);
		console.log(
			"    wall: %d ms mean, %d ms max (a queue consumer has %d minutes; against the fake API on loopback, a real one at ~200 ms a call adds about 2 s)",
			row.wallMsPerInvocation.mean,
			row.wallMsPerInvocation.max,
			LIMITS.wallMinutes,
		);
		console.log(
			"    CPU: local workerd process %s ms mean, %s ms for the control, so about %s ms the reconciliation's own (an upper bound: local D1's SQLite work on the lookups is in it; Free: %d ms, Paid: %s ms by default)",
			row.cpuMsPerInvocation ?? "n/a",
			control?.cpuMsPerInvocation ?? "n/a",
			added ?? "n/a",
			LIMITS.cpuMsFree,
			fmt(LIMITS.cpuMsPaidDefault),
		);
		console.log(
			"    memory: workerd peak RSS %s MiB against %s MiB for the control with no orders (limit %d MB per isolate; local RSS is the whole runtime, not the isolate: the code holds one page of %d orders)",
			row.peakRssMiB ?? "n/a",
			control?.peakRssMiB ?? "n/a",
			LIMITS.memoryMiB,
			pageSize,
		);
	}
}
