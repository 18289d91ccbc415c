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

/** PIDs of running workerd processes (Linux /proc); empty elsewhere. */
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
			.map(Number);
	} catch {
		return [];
	}
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
