/**
 * npm run bench:apply — events applied per second in local D1, batches of 100, the batched
 * consumer side by side with a naive one-statement-per-message consumer, and D1 round trips per
 * batch. Prints figures; asserts nothing.
 */
import { migrate, saveResults, startWorker } from "./lib";

interface RunResult {
	mode: string;
	events: number;
	elapsedMs: number;
	roundTripsPerBatch: number;
}

const SIZE = 100;
const BATCHES = Number(process.env.BENCH_BATCHES ?? 30);
const ROUNDS = 3;

const worker = await startWorker("bench/apply.worker.ts", "bench/wrangler.apply.toml");
try {
	await migrate(worker, "http://bench/setup");
	// Warm up both paths once.
	for (const mode of ["batched", "naive"]) await worker.fetch(`http://bench/run?mode=${mode}&size=${SIZE}&batches=2`);
	const totals: Record<string, { events: number; ms: number; rt: number }> = {
		batched: { events: 0, ms: 0, rt: 0 },
		naive: { events: 0, ms: 0, rt: 0 },
	};
	for (let round = 0; round < ROUNDS; round++) {
		for (const mode of ["batched", "naive"]) {
			const res = await worker.fetch(`http://bench/run?mode=${mode}&size=${SIZE}&batches=${BATCHES}`);
			const r = (await res.json()) as RunResult;
			const t = totals[mode] as { events: number; ms: number; rt: number };
			t.events += r.events;
			t.ms += r.elapsedMs;
			t.rt = r.roundTripsPerBatch;
		}
	}
	const rate = (m: string) => {
		const t = totals[m];
		return t ? t.events / (t.ms / 1000) : 0;
	};
	const results = {
		batchSize: SIZE,
		batches: BATCHES * ROUNDS,
		batched: { eventsPerSecond: Math.round(rate("batched")), roundTripsPerBatch: totals.batched?.rt },
		naive: { eventsPerSecond: Math.round(rate("naive")), roundTripsPerBatch: totals.naive?.rt },
		speedup: Number((rate("batched") / rate("naive")).toFixed(1)),
	};
	console.log("apply benchmark (local D1, batches of %d, %d batches per mode)", SIZE, BATCHES * ROUNDS);
	console.log(
		"  batched: %d events/s, %d D1 round trips per batch",
		results.batched.eventsPerSecond,
		results.batched.roundTripsPerBatch,
	);
	console.log(
		"  naive:   %d events/s, %d D1 round trips per batch",
		results.naive.eventsPerSecond,
		results.naive.roundTripsPerBatch,
	);
	console.log("  speedup: %sx (target >= 5x)", results.speedup);
	console.log("  saved to %s", saveResults("apply", results));
} finally {
	await worker.stop();
}
