/**
 * npx tsx bench/profile-ingress.ts — where the receiver's time goes beyond the design floor
 * (bench/ingress.ts). Inside workerd the clocks stand still between I/O, so a step's CPU cannot
 * be timed from the Worker; instead each run leaves steps out (bench/receiver.worker.ts,
 * BENCH_SKIP) and the difference in throughput, latency and workerd CPU per delivery is what the
 * step costs. Variants run in turn against the floor, on fresh Workers. Prints figures; asserts
 * nothing. Runs vary by 10-20% on a shared machine: read differences larger than that.
 * PROFILE_VARIANTS=",logs,apply" (comma-separated BENCH_SKIP values joined by "+") picks variants;
 * PROFILE_REPS rounds of all variants run interleaved, and each figure is the median of its rounds.
 */
import { cpuSeconds, drive, RECEIVER_PATH, RECEIVER_VARS, signedBatch } from "./ingress";
import { migrate, pidsOf, startWorker, workerdPids } from "./lib";

const C32 = Number(process.env.PROFILE_C32 ?? 2000);
const C1 = Number(process.env.PROFILE_C1 ?? 400);
const REPS = Number(process.env.PROFILE_REPS ?? 3);
const VARIANTS = (process.env.PROFILE_VARIANTS ?? "floor,,logs,mark,apply,logs+mark+apply")
	.split(",")
	.map((v) => v.trim());

interface Figures {
	variant: string;
	rpsC32: number;
	p50C1: number;
	cpuMsPerDelivery: number | null;
}

async function measure(variant: string): Promise<Figures> {
	const before = new Set(workerdPids());
	const floor = variant === "floor";
	const w = floor
		? await startWorker("bench/noop.worker.ts", "bench/wrangler.noop.toml")
		: await startWorker("bench/receiver.worker.ts", "bench/wrangler.receiver.toml", {
				...RECEIVER_VARS,
				BENCH_SKIP: variant.replaceAll("+", ","),
			});
	const pids = await pidsOf(w, before);
	try {
		if (!floor) await migrate(w, "http://bench/__bench/setup");
		const url = floor ? `http://${w.address}:${w.port}/d1-send` : `http://${w.address}:${w.port}${RECEIVER_PATH}`;
		await drive(url, await signedBatch(200), 8);
		await new Promise((resolve) => setTimeout(resolve, 3000));
		const load = await signedBatch(C32);
		const cpu0 = cpuSeconds(pids);
		const c32 = await drive(url, load, 32);
		// The consumer's batches wait up to 2 s; its CPU belongs to these deliveries.
		await new Promise((resolve) => setTimeout(resolve, 4000));
		const cpu1 = cpuSeconds(pids);
		const c1 = await drive(url, await signedBatch(C1), 1);
		return {
			variant: floor ? "floor (no-op + D1 write + send)" : variant === "" ? "receiver" : `receiver without ${variant}`,
			rpsC32: c32.rps,
			p50C1: c1.p50,
			cpuMsPerDelivery: cpu0 !== null && cpu1 !== null ? Math.round(((cpu1 - cpu0) * 1e5) / C32) / 100 : null,
		};
	} finally {
		await w.stop();
	}
}

const runs: Figures[][] = VARIANTS.map(() => []);
for (let rep = 0; rep < REPS; rep++) {
	for (const [i, v] of VARIANTS.entries()) {
		process.stderr.write(`profile: round ${rep + 1}/${REPS}, ${v || "receiver"}...\n`);
		runs[i]?.push(await measure(v));
	}
}
const median = (xs: number[]) => {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)] ?? 0;
};
const rows: Figures[] = runs.map((r) => ({
	variant: r[0]?.variant ?? "",
	rpsC32: median(r.map((x) => x.rpsC32)),
	p50C1: median(r.map((x) => x.p50C1)),
	cpuMsPerDelivery: median(r.map((x) => x.cpuMsPerDelivery ?? Number.NaN)),
}));
const base = rows.find((r) => r.variant.startsWith("floor"));
console.log("  variant                                   rps c32   p50 c1   CPU ms/delivery   vs floor: rps, p50");
for (const r of rows) {
	const vs = base ? `${(r.rpsC32 / base.rpsC32).toFixed(2)}, ${(r.p50C1 - base.p50C1).toFixed(2)} ms` : "";
	console.log(
		`  ${r.variant.padEnd(40)} ${String(r.rpsC32).padStart(8)} ${String(r.p50C1).padStart(8)} ${String(r.cpuMsPerDelivery).padStart(17)}   ${vs}`,
	);
}
