/**
 * npm run bench (first part) — the receiver against a no-op Worker that only reads the body and
 * answers 200, both started locally, driven with the same signed deliveries of the bench's sender
 * (bench/sender.ts: the registry's first) at concurrency 1, 8 and 32. Prints requests per second,
 * p50/p95/p99 ack latency, the ratio to the no-op, and D1 round trips per delivery; writes
 * bench/results/ingress.json. Asserts nothing.
 * Beside the no-op it drives the same Worker with the work docs/design.md puts before every new
 * delivery's 2xx (one D1 write, then one queue send), so the figures separate what the design
 * costs on this runtime from what the receiver's own code adds.
 * Targets: at concurrency 32, >= 60% of the no-op's throughput; at concurrency 1, <= 3 ms added to
 * its p50. On a 2-core machine the load generator shares the CPU with workerd: compare, don't quote.
 * Server CPU per delivery is the utime + stime of the workerd processes this run started (each
 * Worker's own, bench/lib.ts pidsOf), never another process's. bench/profile-ingress.ts shows
 * what each of the receiver's steps costs.
 */

import { readFileSync } from "node:fs";
import { saveChart } from "./chart";
import { migrate, pidsOf, saveResults, startWorker, workerdPids } from "./lib";
import { BENCH_PATH, BENCH_SENDER, BENCH_SENDER_VARS, benchDelivery, benchState, signedAgain } from "./sender";

/** CPU seconds (user + system) these processes have used, from /proc/<pid>/stat; null elsewhere. */
export function cpuSeconds(pids: number[]): number | null {
	if (pids.length === 0) return null;
	let ticks = 0;
	for (const pid of pids) {
		try {
			// Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
			const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
			ticks += Number(rest[11]) + Number(rest[12]);
		} catch {
			return null;
		}
	}
	return ticks / 100; // USER_HZ is 100 on Linux
}

interface D1Counts {
	roundTrips: number;
	rowsWritten: number;
}

/** What the receiver is started with and where its deliveries go (bench/flood.ts, bench/profile-ingress.ts too). */
export const RECEIVER_VARS = { ...BENCH_SENDER_VARS, ADMIN_TOKEN: "" };
export const RECEIVER_PATH = BENCH_PATH;
const LEVELS = [
	{ concurrency: 1, requests: Number(process.env.BENCH_C1 ?? 1500) },
	{ concurrency: 8, requests: Number(process.env.BENCH_C8 ?? 3000) },
	{ concurrency: 32, requests: Number(process.env.BENCH_C32 ?? 4000) },
];

interface Signed {
	messageId: string;
	body: string;
	headers: Record<string, string>;
}

let seq = 0;
export async function signedBatch(n: number): Promise<Signed[]> {
	const out: Signed[] = [];
	for (let i = 0; i < n; i++) {
		const messageId = `bench-${Date.now()}-${seq++}`;
		const state = benchState(`ord_${messageId}`, 1 + (i % 4), "PENDING", Date.now());
		out.push({ messageId, ...(await benchDelivery(messageId, state)) });
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
	// Each Worker runs in workerd processes of its own, children of this one (bench/lib.ts): their
	// CPU is the Worker's, whatever else runs on the machine.
	const before = new Set(workerdPids());
	const receiver = await startWorker("bench/receiver.worker.ts", "bench/wrangler.receiver.toml", RECEIVER_VARS);
	const receiverPids = await pidsOf(receiver, before);
	const noop = await startWorker("bench/noop.worker.ts", "bench/wrangler.noop.toml");
	const noopPids = await pidsOf(noop, new Set([...before, ...receiverPids]));
	const cpu = { receiver: 0, floor: 0, deliveries: 0 };
	const results: ReturnType<typeof summarize>[] = [];
	try {
		await migrate(receiver, "http://bench/__bench/setup");
		const receiverUrl = `http://${receiver.address}:${receiver.port}${RECEIVER_PATH}`;
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
			`ingress benchmark (${BENCH_SENDER.label} deliveries, all new; each Worker's queue consumer runs in the same process)`,
		);
		console.log("  conc  worker                     rps     p50     p95     p99  vs no-op: rps, p50 added (ms)");
		const rowsNew = { rows: 0, deliveries: 0 };
		let lastLoad: Signed[] = [];
		for (const level of LEVELS) {
			const load = await signedBatch(level.requests);
			const before = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as D1Counts;
			const cpu0 = cpuSeconds(receiverPids);
			progress(`c${level.concurrency} receiver`);
			const r = await drive(receiverUrl, load, level.concurrency);
			// Give waitUntil work (mark enqueued) and the consumer (batches wait up to 2 s) time to land.
			await new Promise((resolve) => setTimeout(resolve, 4000));
			const cpu1 = cpuSeconds(receiverPids);
			const after = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as D1Counts;
			rowsNew.rows += after.rowsWritten - before.rowsWritten;
			rowsNew.deliveries += level.requests;
			progress(`c${level.concurrency} no-op`);
			const n = await drive(noopUrl, load, level.concurrency);
			progress(`c${level.concurrency} no-op + D1 write`);
			const oneWrite = await drive(oneWriteUrl, load, level.concurrency);
			progress(`c${level.concurrency} no-op + D1 write + send`);
			const f0 = cpuSeconds(noopPids);
			const floor = await drive(designFloorUrl, load, level.concurrency);
			await new Promise((resolve) => setTimeout(resolve, 4000));
			const f1 = cpuSeconds(noopPids);
			if (cpu0 !== null && cpu1 !== null && f0 !== null && f1 !== null) {
				cpu.receiver += cpu1 - cpu0;
				cpu.floor += f1 - f0;
				cpu.deliveries += level.requests;
			}
			lastLoad = load;
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
		// Duplicates: the last level's deliveries once more (re-signed: timestamps must be fresh).
		const dupLoad = await Promise.all(
			lastLoad.map(async (x) => ({ ...x, headers: await signedAgain(x.messageId, x.body, Date.now()) })),
		);
		const d0 = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as D1Counts;
		await drive(receiverUrl, dupLoad, 8);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		const d1 = (await (await receiver.fetch("http://bench/__bench/d1")).json()) as D1Counts;
		const goals = {
			c32ThroughputVsFloor: { value: c32?.receiverVsDesignFloor.throughputRatio ?? null, goal: ">= 0.9" },
			c1P50AddedVsFloorMs: { value: c1?.receiverVsDesignFloor.p50AddedMs ?? null, goal: "<= +1 ms" },
			cpuMsPerDelivery: {
				receiver: cpu.deliveries ? round((cpu.receiver * 1000) / cpu.deliveries) : null,
				floor: cpu.deliveries ? round((cpu.floor * 1000) / cpu.deliveries) : null,
				added: cpu.deliveries ? round(((cpu.receiver - cpu.floor) * 1000) / cpu.deliveries) : null,
				goal: "added <= +2 ms",
			},
			rowsWrittenPerNewDelivery: { value: round(rowsNew.rows / rowsNew.deliveries), goal: "<= 4" },
			rowsWrittenPerDuplicate: { value: round((d1.rowsWritten - d0.rowsWritten) / dupLoad.length), goal: "1" },
		};
		console.log("  goals (receiver against the design floor, no-op + D1 write + send):");
		console.log(`    throughput at c32: ${goals.c32ThroughputVsFloor.value} of the floor (goal >= 0.9)`);
		console.log(`    p50 added at c1: ${signed(goals.c1P50AddedVsFloorMs.value ?? 0)} ms (goal <= +1 ms)`);
		console.log(
			`    server CPU per delivery, ingress and apply (workerd utime+stime / deliveries): receiver ${goals.cpuMsPerDelivery.receiver} ms, floor ${goals.cpuMsPerDelivery.floor} ms, added ${signed(goals.cpuMsPerDelivery.added ?? 0)} ms (goal <= +2 ms)`,
		);
		console.log(
			`    D1 rows written (meta.rows_written): ${goals.rowsWrittenPerNewDelivery.value} per new delivery, ingress and apply (goal <= 4); ${goals.rowsWrittenPerDuplicate.value} per duplicate (goal 1)`,
		);
		saveResults("ingress-goals", goals);
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
