/** Shared by the benchmark drivers: start a Worker locally, migrate its D1, print and save figures. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Unstable_DevWorker, unstable_dev, unstable_splitSqlQuery } from "wrangler";

export async function startWorker(
	script: string,
	config: string,
	vars: Record<string, string> = {},
): Promise<Unstable_DevWorker> {
	return unstable_dev(script, {
		config,
		vars,
		persistTo: mkdtempSync(path.join(tmpdir(), "bench-")),
		logLevel: "error",
		experimental: { disableExperimentalWarning: true, testMode: false },
	});
}

/** Applies the migrations through a bench Worker's setup route; fails loudly if it is refused. */
export async function migrate(worker: Unstable_DevWorker, url: string): Promise<void> {
	const res = await worker.fetch(url, { method: "POST", body: JSON.stringify({ queries: migrationQueries() }) });
	if (!res.ok) throw new Error(`${url} answered ${res.status}: is BENCH_ONLY set in the bench configuration?`);
}

export function migrationQueries(): string[] {
	const dir = path.join(import.meta.dirname, "..", "migrations");
	return readdirSync(dir)
		.filter((f) => f.endsWith(".sql"))
		.sort()
		.flatMap((f) => unstable_splitSqlQuery(readFileSync(path.join(dir, f), "utf8")));
}

export function saveResults(name: string, data: unknown): string {
	const dir = path.join(import.meta.dirname, "results");
	mkdirSync(dir, { recursive: true });
	const file = path.join(dir, `${name}.json`);
	writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
	return file;
}

/**
 * PIDs of the workerd processes this benchmark started (Linux /proc; empty elsewhere): only
 * descendants of this process, so other workerd processes sharing the machine (another
 * session's tests or dev server) never count toward its CPU or memory figures.
 */
export function workerdPids(): number[] {
	try {
		return readdirSync("/proc")
			.filter((d) => /^\d+$/.test(d))
			.filter((d) => {
				try {
					return readFileSync(`/proc/${d}/comm`, "utf8").trim() === "workerd";
				} catch {
					return false;
				}
			})
			.map(Number)
			.filter((pid) => descendsFrom(pid, process.pid));
	} catch {
		return [];
	}
}

/**
 * The workerd processes a Worker started with startWorker runs in (those not in `before`). Its
 * second process appears only once it serves a first request, so this sends one and waits for the
 * set to settle: listed earlier, it would be counted as the next Worker's.
 */
export async function pidsOf(worker: Unstable_DevWorker, before: ReadonlySet<number>): Promise<number[]> {
	await (await worker.fetch("http://bench/__bench/none")).arrayBuffer();
	let last = "";
	for (let i = 0; i < 50; i++) {
		const now = workerdPids().filter((p) => !before.has(p));
		const key = now.join(",");
		if (key === last && now.length > 0) return now;
		last = key;
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
	return workerdPids().filter((p) => !before.has(p));
}

/** Whether `ancestor` is among the parents of `pid` (from /proc/<pid>/stat's ppid field). */
function descendsFrom(pid: number, ancestor: number): boolean {
	for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
		let parent: number;
		try {
			// The fields after the command name (which may hold spaces): state, then ppid.
			parent = Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
		} catch {
			return false;
		}
		if (parent === ancestor) return true;
		p = parent;
	}
	return false;
}

/** Peak resident memory (VmHWM) of these processes, summed, in MiB; null where unreadable. */
export function peakRssMiB(pids: number[]): number | null {
	return procMiB(pids, "VmHWM");
}

/** Resident memory now (VmRSS), summed, in MiB. */
export function currentRssMiB(pids: number[]): number | null {
	return procMiB(pids, "VmRSS");
}

function procMiB(pids: number[], field: "VmHWM" | "VmRSS"): number | null {
	let kb = 0;
	for (const pid of pids) {
		try {
			const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`${field}:\\s+(\\d+) kB`));
			if (m) kb += Number(m[1]);
		} catch {
			return null;
		}
	}
	return pids.length === 0 ? null : Math.round(kb / 1024);
}
