/**
 * npm run bench (first part) — the receiver against a no-op Worker that only reads the body and
 * answers 200, both started locally, driven with the same signed BlooBank deliveries at
 * concurrency 1, 8 and 32. Prints requests per second, p50/p95/p99 ack latency, the ratio to the
 * no-op, and D1 round trips per delivery; writes bench/results/ingress.json. Asserts nothing.
 * Beside the no-op it drives the same Worker with the work docs/design.md puts before every new
 * delivery's 2xx (one D1 write, then one queue send), so the figures separate what the design
 * costs on this runtime from what the receiver's own code adds.
 * Targets: at concurrency 32, >= 60% of the no-op's throughput; at concurrency 1, <= 3 ms added to
 * its p50. On a 2-core machine the load generator shares the CPU with workerd: compare, don't quote.
 */
import { envelope, signDelivery } from "../scripts/sim/signing";
import { saveChart } from "./chart";
import { migrate, saveResults, startWorker } from "./lib";

export const SECRET = "bench-secret-0123456789abcdef0123456789abcdef";
const LEVELS = [
	{ concurrency: 1, requests: Number(process.env.BENCH_C1 ?? 1500) },
	{ concurrency: 8, requests: Number(process.env.BENCH_C8 ?? 3000) },
	{ concurrency: 32, requests: Number(process.env.BENCH_C32 ?? 4000) },
];

interface Signed {
	body: string;
	headers: Record<string, string>;
}

let seq = 0;
export async function signedBatch(n: number): Promise<Signed[]> {
	const out: Signed[] = [];
	for (let i = 0; i < n; i++) {
		const messageId = `bench-${Date.now()}-${seq++}`;
		const state = {
			id: `ord_${messageId}`,
			version: 1 + (i % 4),
			status: "PENDING",
			amount: 100,
			currency: "BRL",
			direction: "IN" as const,
			at: Date.now(),
		};
		const body = envelope("bloobank", messageId, state);
		out.push({ body, headers: await signDelivery("bloobank", SECRET, body, messageId, Date.now()) });
	}
	return out;
}

function percentile(sorted: number[], p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export async function drive(url: string, requests: Signed[], concurrency: number) {
	const latencies: number[] = [];
	let next = 0;
	let errors = 0;
	const started = performance.now();
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			while (next < requests.length) {
				const r = requests[next++] as Signed;
				const t0 = performance.now();
				const res = await fetch(url, {
					method: "POST",
					headers: { "content-type": "application/json", ...r.headers },
					body: r.body,
				});
				await res.arrayBuffer();
				latencies.push(performance.now() - t0);
				if (res.status !== 200) errors++;
			}
		}),
	);
	const seconds = (performance.now() - started) / 1000;
	latencies.sort((a, b) => a - b);
	return {
		rps: Math.round(requests.length / seconds),
		p50: round(percentile(latencies, 50)),
		p95: round(percentile(latencies, 95)),
		p99: round(percentile(latencies, 99)),
		errors,
	};
}

type Run = Awaited<ReturnType<typeof drive>>;

/** One level's figures, as printed and saved. */
function summarize(
	level: { concurrency: number; requests: number },
	receiver: Run,
	noop: Run,
	noopPlusOneD1Write: Run,
	designFloor: Run,
	roundTrips: number,
) {
	return {
		...level,
		receiver,
		noop,
		noopPlusOneD1Write,
		noopPlusD1WriteAndSend: designFloor,
		throughputRatio: ratio(receiver.rps, noop.rps),
		p50AddedMs: round(receiver.p50 - noop.p50),
		designFloorThroughputRatio: ratio(designFloor.rps, noop.rps),
		designFloorP50AddedMs: round(designFloor.p50 - noop.p50),
		receiverVsDesignFloor: {
			throughputRatio: ratio(receiver.rps, designFloor.rps),
			p50AddedMs: round(receiver.p50 - designFloor.p50),
		},
		d1RoundTripsPerDelivery: round(roundTrips / level.requests),
	};
}

function printLine(conc: number, label: string, r: Run, vs: Run | null, extra = ""): void {
	const pad = (x: string | number, w: number) => String(x).padStart(w);
	const versus = vs
		? `${pad(ratio(r.rps, vs.rps), 6)} ${pad(signed(r.p50 - vs.p50), 9)}`
		: `${pad("1", 6)} ${pad("", 9)}`;
	console.log(
		`  ${pad(conc, 4)}  ${label.padEnd(24)} ${pad(r.rps, 5)} ${pad(r.p50, 7)} ${pad(r.p95, 7)} ${pad(r.p99, 7)}  ${versus}${extra}${r.errors > 0 ? `  (${r.errors} errors)` : ""}`,
	);
}

export async function benchIngress() {
	const receiver = await startWorker("bench/receiver.worker.ts", "bench/wrangler.receiver.toml", {
		BLOOBANK_WEBHOOK_SECRETS: SECRET,
		ADMIN_TOKEN: "",
	});
	const noop = await startWorker("bench/noop.worker.ts", "bench/wrangler.noop.toml");
	const results: ReturnType<typeof summarize>[] = [];
	try {
		await migrate(receiver, "http://bench/__bench/setup");
		const receiverUrl = `http://${receiver.address}:${receiver.port}/webhooks/bloobank`;
		const noopBase = `http://${noop.address}:${noop.port}`;
		const noopUrl = `${noopBase}/noop`;
		const oneWriteUrl = `${noopBase}/d1`;
		const designFloorUrl = `${noopBase}/d1-send`;
		// Warm everything up; the warm-up rates give the expected time of the whole run.
		const started = performance.now();
		process.stderr.write("ingress: warming up the receiver and the comparison Workers...\n");
		const warm = [
			await drive(receiverUrl, await signedBatch(200), 8),
			await drive(noopUrl, await signedBatch(200), 8),
			await drive(oneWriteUrl, await signedBatch(50), 4),
			await drive(designFloorUrl, await signedBatch(50), 4),
		];
		const expectedS = LEVELS.reduce(
			(sum, l) => sum + 1 + warm.reduce((s2, w) => s2 + l.requests / Math.max(1, w.rps), 0),
			0,
		);
		process.stderr.write(
			`ingress: ${LEVELS.length} levels x 4 Workers, ${LEVELS.reduce((n, l) => n + 4 * l.requests, 0)} requests: expect about ${Math.ceil(expectedS)} s (from the warm-up rates)\n`,
		);
		let step = 0;
		const progress = (label: string) =>
			process.stderr.write(
				`  [${++step}/${LEVELS.length * 4}] ${label} (${Math.round((performance.now() - started) / 1000)} s of about ${Math.ceil(expectedS)} s)\n`,
			);
		console.log(
			"ingress benchmark (BlooBank deliveries, all new; each Worker's queue consumer runs in the same process)",
		);
		console.log("  conc  worker                     rps     p50     p95     p99  vs no-op: rps, p50 added (ms)");
		for (const level of LEVELS) {
			const load = await signedBatch(level.requests);
			const before = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as { roundTrips: number };
			progress(`c${level.concurrency} receiver`);
			const r = await drive(receiverUrl, load, level.concurrency);
			// Give waitUntil work (mark enqueued) a moment to land before reading the counter.
			await new Promise((resolve) => setTimeout(resolve, 1000));
			const after = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as { roundTrips: number };
			progress(`c${level.concurrency} no-op`);
			const n = await drive(noopUrl, load, level.concurrency);
			progress(`c${level.concurrency} no-op + D1 write`);
			const oneWrite = await drive(oneWriteUrl, load, level.concurrency);
			progress(`c${level.concurrency} no-op + D1 write + send`);
			const floor = await drive(designFloorUrl, load, level.concurrency);
			const row = summarize(level, r, n, oneWrite, floor, after.roundTrips - before.roundTrips);
			results.push(row);
			printLine(level.concurrency, "no-op", n, null);
			printLine(level.concurrency, "no-op + 1 D1 write", oneWrite, n);
			printLine(level.concurrency, "no-op + D1 write + send", floor, n);
			printLine(
				level.concurrency,
				"receiver",
				r,
				n,
				`   vs no-op + D1 write + send: ${row.receiverVsDesignFloor.throughputRatio}, ${signed(row.receiverVsDesignFloor.p50AddedMs)} ms; D1 round trips per delivery ${row.d1RoundTripsPerDelivery}`,
			);
		}
		const c32 = results.find((x) => x.concurrency === 32);
		const c1 = results.find((x) => x.concurrency === 1);
		console.log(
			`  targets: c32 rps ratio >= 0.6 (receiver ${c32?.throughputRatio}; no-op + D1 write + send ${c32?.designFloorThroughputRatio}), c1 p50 added <= 3 ms (receiver ${c1?.p50AddedMs}; no-op + D1 write + send ${c1?.designFloorP50AddedMs})`,
		);
		console.log(
			"  (docs/design.md puts one D1 write and one queue send before every new delivery's 2xx; the no-op + D1 write + send row is that floor here)",
		);
		console.log("  saved to %s", saveResults("ingress", results));
		console.log("  chart   %s", saveChart("ingress", results));
	} finally {
		await receiver.stop();
		await noop.stop();
	}
	return results;
}

function round(x: number): number {
	return Math.round(x * 100) / 100;
}

function signed(x: number): string {
	return `${x >= 0 ? "+" : ""}${round(x)}`;
}

function ratio(a: number, b: number): number {
	return round(a / b);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchIngress();
