/**
 * npm run bench:reconcile — reconcile N seeded orders (default 100,000) against the fake BlooBank
 * API over loopback HTTP; prints orders per second, pages, the most D1 round trips and
 * subrequests any one invocation made, and the reconcile worker's peak memory. It runs a small
 * and a large set so the memory figures can be compared. Asserts nothing.
 */
import { ACCESS_KEY, PRIVATE_KEY_HEX } from "../fixtures/fake-bloobank";
import { currentRssMiB, migrate, peakRssMiB, saveResults, startWorker, workerdPids } from "./lib";

const SIZES = (process.env.BENCH_ORDERS ?? "10000,100000").split(",").map(Number);

interface Report {
	pages: number;
	orders_seen: number;
	repaired: number;
	status: string;
}

interface JobResult {
	jobs: unknown[];
	d1: number;
	subrequests: number;
}

const api = await startWorker("bench/fake-api.worker.ts", "bench/wrangler.fake-api.toml");
const results: Record<string, unknown>[] = [];

/** A fresh reconcile worker, migrated, pointed at the fake API, with the workerd PIDs it added. */
async function startReconcileWorker() {
	const before = new Set(workerdPids());
	const worker = await startWorker("bench/reconcile.worker.ts", "bench/wrangler.reconcile.toml", {
		BLOOBANK_API_BASE_URL: `http://${api.address}:${api.port}/txengine/v1`,
		BLOOBANK_ACCESS_KEY: ACCESS_KEY,
		BLOOBANK_PRIVATE_KEY: PRIVATE_KEY_HEX,
		BLOOBANK_WALLETS: "w1",
		RECONCILE_LOOKBACK_HOURS: "6",
	});
	const pids = workerdPids().filter((p) => !before.has(p));
	await migrate(worker, "http://bench/setup");
	return { worker, pids };
}
try {
	for (const n of SIZES) {
		const { worker, pids: mine } = await startReconcileWorker();
		try {
			await api.fetch(`http://bench/seed?n=${n}`);
			const started = performance.now();
			const plan = (await (await worker.fetch("http://bench/plan")).json()) as { runId: string; jobs: unknown[] };
			const queue = [...plan.jobs];
			const rssCurve: (number | null)[] = [];
			let invocations = 0;
			let maxD1 = 0;
			let maxSubrequests = 0;
			while (queue.length > 0) {
				const res = await worker.fetch("http://bench/job", { method: "POST", body: JSON.stringify(queue.shift()) });
				const j = (await res.json()) as JobResult;
				queue.push(...j.jobs);
				invocations++;
				if (invocations % 10 === 0) rssCurve.push(currentRssMiB(mine));
				maxD1 = Math.max(maxD1, j.d1);
				maxSubrequests = Math.max(maxSubrequests, j.subrequests);
			}
			const elapsedMs = performance.now() - started;
			const r = (await (await worker.fetch(`http://bench/report?run=${plan.runId}`)).json()) as Report;
			const row = {
				orders: n,
				status: r.status,
				ordersPerSecond: Math.round(r.orders_seen / (elapsedMs / 1000)),
				pages: r.pages,
				invocations,
				maxD1RoundTripsPerInvocation: maxD1,
				maxSubrequestsPerInvocation: maxSubrequests,
				repaired: r.repaired,
				peakRssMiB: peakRssMiB(mine),
				rssEvery10InvocationsMiB: rssCurve,
			};
			results.push(row);
			console.log(
				"reconcile %d orders: %s, %d orders/s, %d pages in %d invocations, max per invocation %d D1 round trips and %d subrequests, workerd peak RSS %s MiB",
				n,
				row.status,
				row.ordersPerSecond,
				row.pages,
				row.invocations,
				row.maxD1RoundTripsPerInvocation,
				row.maxSubrequestsPerInvocation,
				row.peakRssMiB ?? "n/a",
			);
		} finally {
			await worker.stop();
		}
	}
	// Control: a fresh worker making the same number of requests, D1 round trips and subrequests as
	// the largest run, with no orders. workerd's RSS in local mode grows per request and per query
	// (seen with no-op requests), so the run's RSS means something only next to this one.
	const last = results.at(-1) as
		| { invocations: number; maxD1RoundTripsPerInvocation: number; maxSubrequestsPerInvocation: number }
		| undefined;
	if (last) {
		const { worker, pids: mine } = await startReconcileWorker();
		try {
			const curve: (number | null)[] = [];
			for (let i = 1; i <= last.invocations; i++) {
				await worker.fetch(
					`http://bench/control?d1=${last.maxD1RoundTripsPerInvocation}&subrequests=${Math.min(10, last.maxSubrequestsPerInvocation)}`,
				);
				if (i % 10 === 0) curve.push(currentRssMiB(mine));
			}
			const control = {
				control: "same requests, D1 round trips and 10 subrequests each, no orders",
				invocations: last.invocations,
				peakRssMiB: peakRssMiB(mine),
				rssEvery10InvocationsMiB: curve,
			};
			results.push(control);
			console.log(
				"control, no orders, %d invocations: workerd peak RSS %s MiB",
				last.invocations,
				control.peakRssMiB ?? "n/a",
			);
		} finally {
			await worker.stop();
		}
	}
	console.log("  saved to %s", saveResults("reconcile", results));
} finally {
	await api.stop();
}
