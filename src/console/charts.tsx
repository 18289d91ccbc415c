/**
 * Charts drawn by the Worker as inline SVG: no script, no image request, readable without colour
 * (every chart has a title, a legend and a text summary). Colours are attributes, not styles, so
 * the CSP needs no 'unsafe-inline'.
 */

const W = 720;
const H = 160;
const PAD_L = 44;
const PAD_B = 18;
const PLOT_W = W - PAD_L - 6;
const PLOT_H = H - PAD_B - 8;

export const COLOURS: Record<string, string> = {
	processed: "#2da44e",
	stale: "#8c959f",
	ignored: "#bf8700",
	failed: "#cf222e",
	pending: "#0969da",
	p50: "#0969da",
	p99: "#cf222e",
};

export interface Series {
	name: string;
	colour: string;
	/** One value per slot; null: no data in that slot (the line breaks). */
	values: (number | null)[];
}

function niceMax(max: number): number {
	if (max <= 0) return 1;
	const p = 10 ** Math.floor(Math.log10(max));
	for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
	return 10 * p;
}

/**
 * A line per series over `slots` equal slots. Runs of equal values are drawn as one segment, so a
 * mostly quiet day of 1,440 minutes costs a few points, not 1,440.
 */
function path(values: (number | null)[], max: number): string {
	const n = values.length;
	const x = (i: number) => (PAD_L + (n <= 1 ? 0 : (i / (n - 1)) * PLOT_W)).toFixed(1);
	const y = (v: number) => (8 + PLOT_H - (v / max) * PLOT_H).toFixed(1);
	let d = "";
	let drawing = false;
	for (let i = 0; i < n; i++) {
		const v = values[i];
		if (v === null || v === undefined) {
			drawing = false;
			continue;
		}
		const prev = values[i - 1];
		const next = values[i + 1];
		// Interior points of a flat run add nothing to the line.
		if (drawing && prev === v && next === v) continue;
		d += `${drawing ? "L" : "M"}${x(i)} ${y(v)}`;
		drawing = true;
	}
	return d;
}

/** Points with no neighbour on either side, which a line alone would not show. */
function isolated(values: (number | null)[]): number[] {
	const out: number[] = [];
	values.forEach((v, i) => {
		if (v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null) out.push(i);
	});
	return out;
}

export function LineChart(p: {
	title: string;
	series: Series[];
	unit: string;
	/** Formats the axis maximum (default: the number and the unit). */
	format?: (v: number) => string;
	xLabels: [string, string, string];
	summary: string;
}) {
	const max = niceMax(Math.max(0, ...p.series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
	const id = p.title.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
	return (
		<figure>
			<svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-t ${id}-d`} width={W} height={H}>
				<title id={`${id}-t`}>{p.title}</title>
				<desc id={`${id}-d`}>{p.summary}</desc>
				<line x1={PAD_L} y1={8} x2={PAD_L} y2={8 + PLOT_H} stroke="#8c959f" stroke-width="1" />
				<line x1={PAD_L} y1={8 + PLOT_H} x2={W - 6} y2={8 + PLOT_H} stroke="#8c959f" stroke-width="1" />
				<line x1={PAD_L} y1={8} x2={W - 6} y2={8} stroke="#8c959f" stroke-width="0.5" stroke-dasharray="3 3" />
				<text x={PAD_L - 4} y={12} text-anchor="end">
					{p.format ? p.format(max) : `${max}${p.unit}`}
				</text>
				<text x={PAD_L - 4} y={8 + PLOT_H} text-anchor="end">
					0
				</text>
				<text x={PAD_L} y={H - 4}>
					{p.xLabels[0]}
				</text>
				<text x={PAD_L + PLOT_W / 2} y={H - 4} text-anchor="middle">
					{p.xLabels[1]}
				</text>
				<text x={W - 6} y={H - 4} text-anchor="end">
					{p.xLabels[2]}
				</text>
				{p.series.map((s) => (
					<path d={path(s.values, max)} fill="none" stroke={s.colour} stroke-width="1.5" stroke-linejoin="round" />
				))}
				{p.series.flatMap((s) =>
					isolated(s.values).map((i) => (
						<circle
							cx={(PAD_L + (s.values.length <= 1 ? 0 : (i / (s.values.length - 1)) * PLOT_W)).toFixed(1)}
							cy={(8 + PLOT_H - ((s.values[i] ?? 0) / max) * PLOT_H).toFixed(1)}
							r="3"
							fill={s.colour}
						/>
					)),
				)}
			</svg>
			<figcaption>
				<strong>{p.title}</strong>
				<ul class="legend">
					{p.series.map((s) => (
						<li>
							<svg class="swatch" viewBox="0 0 10 10" width="10" height="10" aria-hidden="true">
								<rect width="10" height="10" fill={s.colour} />
							</svg>
							{s.name}
						</li>
					))}
				</ul>
				<span class="muted">{p.summary}</span>
			</figcaption>
		</figure>
	);
}

/** Horizontal bars, one per label, for totals (rejections by reason). */
export function BarChart(p: { title: string; bars: { label: string; value: number }[]; empty: string }) {
	if (p.bars.length === 0)
		return (
			<figure>
				<figcaption>
					<strong>{p.title}</strong>
				</figcaption>
				<p class="muted">{p.empty}</p>
			</figure>
		);
	const max = Math.max(...p.bars.map((b) => b.value), 1);
	const rowH = 20;
	const labelW = 230;
	const h = p.bars.length * rowH + 4;
	return (
		<figure>
			<svg viewBox={`0 0 ${W} ${h}`} width={W} height={h} role="img" aria-label={p.title}>
				<title>{p.title}</title>
				{p.bars.map((b, i) => (
					<g>
						<text x={labelW - 6} y={i * rowH + 14} text-anchor="end">
							{b.label}
						</text>
						<rect
							x={labelW}
							y={i * rowH + 3}
							width={Math.max(1, ((W - labelW - 60) * b.value) / max)}
							height={rowH - 6}
							fill="#cf222e"
						/>
						<text x={labelW + ((W - labelW - 60) * b.value) / max + 6} y={i * rowH + 14}>
							{String(b.value)}
						</text>
					</g>
				))}
			</svg>
			<figcaption>
				<strong>{p.title}</strong>
			</figcaption>
		</figure>
	);
}
