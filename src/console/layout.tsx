/** The console's page shell: one inline stylesheet allowed by a per-response nonce, nothing fetched. */
import type { Child } from "hono/jsx";

export const NAV: readonly [string, string][] = [
	["/console", "Overview"],
	["/console/deliveries", "Deliveries"],
	["/console/resources", "Resources"],
	["/console/effects", "Effects"],
	["/console/reconcile", "Reconcile"],
	["/console/alerts", "Alerts"],
	["/console/rejections", "Rejections"],
];

/**
 * Strict: no script at all, styles only from the nonced <style>, images only inline, forms only
 * to this origin, never framed (docs/design.md, operator console).
 */
export function contentSecurityPolicy(nonce: string): string {
	return [
		"default-src 'none'",
		`style-src 'nonce-${nonce}'`,
		"img-src 'self' data:",
		"form-action 'self'",
		"frame-ancestors 'none'",
		"base-uri 'none'",
	].join("; ");
}

const CSS = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#57606a;--line:#d0d7de;--accent:#0a58ca;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--panel:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8d96a0;--line:#30363d;--accent:#4493f8;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--panel:#161b22}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1rem;padding:.6rem 1rem;border-bottom:1px solid var(--line);background:var(--panel)}
header strong{margin-right:.5rem}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem .9rem;list-style:none;margin:0;padding:0}
nav a[aria-current=page]{font-weight:600;text-decoration:underline}
main{padding:1rem;max-width:1200px;margin:0 auto}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}
.scroll{overflow-x:auto}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:.75rem}
.card{border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem;background:var(--panel)}
.card h2{margin:0 0 .4rem;font-size:1rem}
.big{font-size:1.6rem;font-weight:600}
.muted{color:var(--muted)}
.ok{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}
.flash{border:1px solid var(--ok);padding:.5rem .8rem;border-radius:6px;margin-bottom:1rem}
.flash.error{border-color:var(--bad)}
pre{background:var(--panel);border:1px solid var(--line);padding:.75rem;overflow:auto;max-height:32rem;font-size:.85rem}
form.inline{display:inline}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin-bottom:1rem}
label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted)}
input,select,button{font:inherit;padding:.3rem .5rem;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg)}
button{cursor:pointer;background:var(--accent);color:#fff;border-color:var(--accent)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
svg{max-width:100%;height:auto;display:block}
svg text{fill:var(--muted);font-size:11px}
progress{width:12rem;max-width:100%}
.legend{display:flex;flex-wrap:wrap;gap:.2rem 1rem;font-size:.85rem;list-style:none;padding:0;margin:.3rem 0 0}
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:-.05em}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:.5rem;background:var(--bg);padding:.3rem}
`;

export interface PageProps {
	title: string;
	nonce: string;
	path: string;
	signedIn: boolean;
	csrf?: string;
	flash?: { text: string; error?: boolean } | null;
	children?: Child;
}

export function Page(p: PageProps) {
	return (
		<html lang="en">
			<head>
				<meta charset="utf-8" />
				<meta name="viewport" content="width=device-width, initial-scale=1" />
				<meta name="referrer" content="same-origin" />
				{/* No favicon request: the console fetches nothing it does not render itself. */}
				<link rel="icon" href="data:," />
				<title>{`${p.title} · webhook receiver console`}</title>
				<style nonce={p.nonce} dangerouslySetInnerHTML={{ __html: CSS }} />
			</head>
			<body>
				<a class="skip" href="#main">
					Skip to content
				</a>
				<header>
					<strong>Webhook receiver</strong>
					{p.signedIn && (
						<nav aria-label="Console">
							<ul>
								{NAV.map(([href, label]) => (
									<li>
										<a href={href} aria-current={p.path === href ? "page" : undefined}>
											{label}
										</a>
									</li>
								))}
								<li>
									<form class="inline" method="post" action="/console/logout">
										<input type="hidden" name="csrf" value={p.csrf ?? ""} />
										<button type="submit">Sign out</button>
									</form>
								</li>
							</ul>
						</nav>
					)}
				</header>
				<main id="main">
					<h1>{p.title}</h1>
					{p.flash && (
						<p class={p.flash.error ? "flash error" : "flash"} role="status">
							{p.flash.text}
						</p>
					)}
					{p.children}
				</main>
			</body>
		</html>
	);
}

/** A hidden CSRF field plus a submit button: every state change is a form like this. */
export function PostButton(p: { action: string; csrf: string; label: string; fields?: Record<string, string> }) {
	return (
		<form class="inline" method="post" action={p.action}>
			<input type="hidden" name="csrf" value={p.csrf} />
			{Object.entries(p.fields ?? {}).map(([k, v]) => (
				<input type="hidden" name={k} value={v} />
			))}
			<button type="submit">{p.label}</button>
		</form>
	);
}

export const iso = (ms: number | null | undefined) =>
	ms === null || ms === undefined ? "—" : new Date(ms).toISOString().replace(".000Z", "Z");

export function ago(ms: number | null | undefined, nowMs: number): string {
	if (ms === null || ms === undefined) return "—";
	const s = Math.max(0, Math.round((nowMs - ms) / 1000));
	if (s < 120) return `${s} s ago`;
	if (s < 7200) return `${Math.round(s / 60)} min ago`;
	if (s < 172_800) return `${Math.round(s / 3600)} h ago`;
	return `${Math.round(s / 86_400)} d ago`;
}

/** A scrollable table with its column headings; the rows are the children. */
export function Table(p: { heads: readonly string[]; children?: Child }) {
	return (
		<div class="scroll">
			<table>
				<thead>
					<tr>
						{p.heads.map((h) => (
							<th scope="col">{h}</th>
						))}
					</tr>
				</thead>
				<tbody>{p.children}</tbody>
			</table>
		</div>
	);
}

/** A labelled select of `options` (with "any" first when `any`), for the filter forms. */
export function Choice(p: {
	id: string;
	label: string;
	name: string;
	options: readonly string[];
	selected: string | null | undefined;
	any?: boolean;
}) {
	return (
		<label for={p.id}>
			{p.label}
			<select id={p.id} name={p.name}>
				{p.any ? <option value="">any</option> : null}
				{p.options.map((o) => (
					<option value={o} selected={o === p.selected}>
						{o}
					</option>
				))}
			</select>
		</label>
	);
}
