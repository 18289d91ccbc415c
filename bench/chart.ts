/**
 * SVG charts of the benchmark results, drawn from the JSON the benchmarks write (never from
 * typed-in figures). The benchmarks call these beside saveResults; `npm run bench:charts` redraws
 * every chart from bench/results/*.json, and `-- --out docs` writes them where the README shows them.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { BENCH_SENDER } from "./sender";

const W = 720;
const H = 360;
const M = { top: 48, right: 20, bottom: 64, left: 64 };
const COLORS = ["#9aa5b1", "#6c8ebf", "#3d5a80", "#e07a5f", "#81b29a", "#c9a227", "#7b5ea7"];

const esc = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

function frame(title: string, subtitle: string, body: string[], yMax: number, yLabel: string): string {
	const plotH = H - M.top - M.bottom;
	const ticks = niceTicks(yMax);
	const top = ticks.at(-1) ?? 1;
	const grid = ticks.map((t) => {
		const y = M.top + plotH - (t / top) * plotH;
		return `<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#e4e7eb"/><text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${t}</text>`;
	});
	return [
		`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="12" fill="#1f2933" role="img">`,
		`<title>${esc(title)}: ${esc(subtitle)}</title>`,
		`<rect width="${W}" height="${H}" fill="#ffffff"/>`,
		`<text x="${M.left}" y="20" font-size="15" font-weight="600">${esc(title)}</text>`,
		`<text x="${M.left}" y="37" fill="#52606d">${esc(subtitle)}</text>`,
		...grid,
		`<text transform="translate(16 ${M.top + plotH / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
		...body,
		"</svg>",
		"",
	].join("\n");
}

function niceTicks(max: number): number[] {
	const rough = Math.max(max, 1) / 5;
	const mag = 10 ** Math.floor(Math.log10(rough));
	const step = ([1, 2, 5, 10].find((s) => s * mag >= rough) ?? 10) * mag;
	const top = Math.ceil(Math.max(max, 1) / step) * step;
	return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => Math.round(i * step * 100) / 100);
}

function legend(labels: string[], y: number): string[] {
	let x = M.left;
	return labels.map((label, i) => {
		const item = `<rect x="${x}" y="${y - 9}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${x + 14}" y="${y}">${esc(label)}</text>`;
		x += 24 + label.length * 6.5;
		return item;
	});
}

interface IngressRow {
	concurrency: number;
	requests: number;
	receiver: { rps: number; p50: number };
	noop: { rps: number; p50: number };
	noopPlusOneD1Write: { rps: number; p50: number };
	noopPlusD1WriteAndSend: { rps: number; p50: number };
}

/** Requests per second by concurrency: the no-op, the design floor on the way to it, the receiver. */
export function ingressSvg(rows: IngressRow[], note = ""): string {
	const series: [string, (r: IngressRow) => { rps: number; p50: number }][] = [
		["no-op", (r) => r.noop],
		["no-op + D1 write", (r) => r.noopPlusOneD1Write],
		["no-op + D1 write + send (design floor)", (r) => r.noopPlusD1WriteAndSend],
		["receiver", (r) => r.receiver],
	];
	const yMax = Math.max(...rows.flatMap((r) => series.map(([, f]) => f(r).rps)));
	const top = niceTicks(yMax).at(-1) ?? 1;
	const plotW = W - M.left - M.right;
	const plotH = H - M.top - M.bottom;
	const group = plotW / rows.length;
	const bar = (group * 0.8) / series.length;
	const body: string[] = [];
	rows.forEach((row, g) => {
		series.forEach(([, f], s) => {
			const v = f(row);
			const h = (v.rps / top) * plotH;
			const x = M.left + g * group + group * 0.1 + s * bar;
			const y = M.top + plotH - h;
			body.push(
				`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(bar - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[s]}"><title>${esc(series[s]?.[0] ?? "")}: ${v.rps} req/s, p50 ${v.p50} ms</title></rect>`,
				`<text x="${(x + bar / 2 - 1).toFixed(1)}" y="${(y - 4).toFixed(1)}" text-anchor="middle" font-size="10">${v.rps}</text>`,
			);
		});
		body.push(
			`<text x="${M.left + g * group + group / 2}" y="${M.top + plotH + 16}" text-anchor="middle">concurrency ${row.concurrency} (${row.requests} requests)</text>`,
		);
	});
	body.push(
		...legend(
			series.map(([l]) => l),
			H - 14,
		),
	);
	return frame(
		"Ingress: requests per second (higher is better)",
		`new signed ${BENCH_SENDER.label} deliveries, local workerd${note ? `; ${note}` : ""}`,
		body,
		top,
		"requests / s",
	);
}

interface ReconcileRow {
	orders?: number;
	/** Absent in results written before the bench ran over shards: one database. */
	shards?: number;
	control?: string;
	invocations: number;
	peakRssMiB: number | null;
	rssEvery10InvocationsMiB: (number | null)[];
}

/** workerd RSS every 10 invocations: each run against the control with no orders. */
export function reconcileSvg(rows: ReconcileRow[], note = ""): string {
	const lines = rows.map((r) => ({
		label: r.control
			? `control${r.shards ? `, ${r.shards} shard${r.shards === 1 ? "" : "s"}` : ""}: no orders`
			: `${r.orders?.toLocaleString("en-US")} orders${r.shards ? `, ${r.shards} shard${r.shards === 1 ? "" : "s"}` : ""}`,
		points: r.rssEvery10InvocationsMiB.map((v, i) => [(i + 1) * 10, v] as const).filter((p) => p[1] !== null) as [
			number,
			number,
		][],
	}));
	const xMax = Math.max(10, ...lines.flatMap((l) => l.points.map((p) => p[0])));
	const yMax = Math.max(1, ...lines.flatMap((l) => l.points.map((p) => p[1])));
	const top = niceTicks(yMax).at(-1) ?? 1;
	const plotW = W - M.left - M.right;
	const plotH = H - M.top - M.bottom;
	const px = (x: number) => M.left + (x / xMax) * plotW;
	const py = (y: number) => M.top + plotH - (y / top) * plotH;
	const body: string[] = [];
	lines.forEach((l, i) => {
		if (l.points.length === 0) return;
		const d = l.points.map(([x, y], j) => `${j === 0 ? "M" : "L"}${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ");
		body.push(
			`<path d="${d}" fill="none" stroke="${COLORS[(i + 2) % COLORS.length]}" stroke-width="2"${rows[i]?.control ? ' stroke-dasharray="6 4"' : ""}/>`,
			...l.points.map(
				([x, y]) =>
					`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${COLORS[(i + 2) % COLORS.length]}"><title>${esc(l.label)}: ${y} MiB after ${x} invocations</title></circle>`,
			),
		);
	});
	for (const t of niceTicks(xMax)) {
		if (t > xMax) continue;
		body.push(`<text x="${px(t)}" y="${M.top + plotH + 16}" text-anchor="middle">${t}</text>`);
	}
	body.push(`<text x="${M.left + plotW / 2}" y="${M.top + plotH + 32}" text-anchor="middle">invocations</text>`);
	// The legend wraps onto a second row below the axis title when it is wider than the chart.
	let x = M.left;
	let y = H - 14;
	const widths = lines.map((l) => 36 + l.label.length * 6.5);
	if (M.left + widths.reduce((a, w) => a + w, 0) > W - M.right) y = H - 18;
	lines.forEach((l, i) => {
		const w = widths[i] ?? 0;
		if (x > M.left && x + w > W - M.right) {
			x = M.left;
			y += 14;
		}
		body.push(
			`<line x1="${x}" x2="${x + 18}" y1="${y - 4}" y2="${y - 4}" stroke="${COLORS[(i + 2) % COLORS.length]}" stroke-width="2"${rows[i]?.control ? ' stroke-dasharray="6 4"' : ""}/><text x="${x + 22}" y="${y}">${esc(l.label)}</text>`,
		);
		x += w;
	});
	return frame(
		"Reconcile: workerd memory against its control",
		`resident set size every 10 invocations, local mode${note ? `; ${note}` : ""}`,
		body,
		top,
		"RSS (MiB)",
	);
}

/** Writes `<name>.svg` beside `<name>.json` (or into `outDir`). */
export function saveChart(name: "ingress" | "reconcile", data: unknown, outDir?: string, note = ""): string {
	const dir = outDir ?? path.join(import.meta.dirname, "results");
	mkdirSync(dir, { recursive: true });
	const svg = name === "ingress" ? ingressSvg(data as IngressRow[], note) : reconcileSvg(data as ReconcileRow[], note);
	const file = path.join(dir, `bench-${name}.svg`);
	writeFileSync(file, svg);
	return file;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
	const args = process.argv.slice(2);
	if (args.includes("--help") || args.includes("-h")) {
		console.log(
			"Usage: npm run bench:charts [-- --out DIR] [--note TEXT] [--only ingress|reconcile]\n\nRedraws bench/results/bench-ingress.svg and bench-reconcile.svg from the JSON beside them.",
		);
		process.exit(0);
	}
	const out = args.includes("--out") ? args[args.indexOf("--out") + 1] : undefined;
	const note = args.includes("--note") ? (args[args.indexOf("--note") + 1] ?? "") : "";
	const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
	for (const name of ["ingress", "reconcile"] as const) {
		if (only && only !== name) continue;
		const json = path.join(import.meta.dirname, "results", `${name}.json`);
		if (!existsSync(json)) {
			console.error(`bench:charts: no ${path.relative(process.cwd(), json)} (run npm run bench:${name} first)`);
			continue;
		}
		console.log(saveChart(name, JSON.parse(readFileSync(json, "utf8")), out, note));
	}
}
