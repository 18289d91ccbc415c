/**
 * npm run test:browser — the operator console in real headless Chromium (playwright-core driving
 * the system's Chromium) against `wrangler dev` with local D1 and Queues on a loopback port:
 * sign in, open every page, send a signed delivery, find it, replay it with the button and see it
 * processed again with its effect still applied once, start a reconcile run. Fails on any page
 * error and on any request that leaves the host. Saves the overview's screenshot to
 * docs/console.png. Chromium: CHROMIUM_PATH, else /usr/bin/chromium.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Page } from "playwright-core";
import { envelope, signDelivery } from "../../scripts/sim/signing";

const ROOT = path.join(import.meta.dirname, "..", "..");
const WRANGLER = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const TOKEN = "browser-suite-admin-token-0123456789abcdef";
const SECRET = "browser-suite-bloobank-secret-0123456789abcdef";
const VARS = { ADMIN_TOKEN: TOKEN, BLOOBANK_WEBHOOK_SECRETS: SECRET, BLOOBANK_SECRET_ENCODING: "utf8" };

function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.once("error", reject);
		s.listen(0, "127.0.0.1", () => {
			const address = s.address();
			s.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
		});
	});
}

function check(ok: unknown, message: string): asserts ok {
	if (!ok) throw new Error(message);
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
	const deadline = Date.now() + ms;
	for (;;) {
		const v = await probe();
		if (v) return v;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 300));
	}
}

const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };
const persist = mkdtempSync(path.join(tmpdir(), "console-browser-"));
const migrate = spawnSync(
	process.execPath,
	[WRANGLER, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist],
	{
		cwd: ROOT,
		env,
		encoding: "utf8",
	},
);
check(migrate.status === 0, `migrations failed: ${migrate.stderr}`);

const port = await freePort();
const inspector = await freePort();
const base = `http://localhost:${port}`;
const host = `localhost:${port}`;
const dev: ChildProcess = spawn(
	process.execPath,
	[
		WRANGLER,
		"dev",
		"--ip",
		"127.0.0.1",
		"--port",
		String(port),
		"--inspector-port",
		String(inspector),
		"--persist-to",
		persist,
		"--show-interactive-dev-session=false",
		...Object.entries(VARS).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
	],
	{ cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
);
let devLog = "";
dev.stdout?.on("data", (d) => {
	devLog += d;
});
dev.stderr?.on("data", (d) => {
	devLog += d;
});

const pageErrors: string[] = [];
const foreign: string[] = [];
const steps: string[] = [];
const step = (s: string) => {
	steps.push(s);
	console.log(`  ok  ${s}`);
};

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
	args: ["--no-sandbox"],
});
try {
	await until(
		"wrangler dev",
		async () => {
			try {
				return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
			} catch {
				return false;
			}
		},
		60_000,
	);

	const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
	const page = await context.newPage();
	page.on("pageerror", (e) => pageErrors.push(String(e)));
	page.on("console", (m) => {
		// A CSP violation is reported on the console, not as a page error. (The wrong-token 401 of
		// the sign-in step is logged there too, as a failed load: expected.)
		if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text()))
			pageErrors.push(`console: ${m.text()}`);
	});
	page.on("request", (r) => {
		const url = new URL(r.url());
		if (!["data:", "about:"].includes(url.protocol) && url.host !== host) foreign.push(r.url());
	});

	const open = async (p: Page, pathname: string) => {
		const res = await p.goto(`${base}${pathname}`);
		check(res?.status() === 200, `${pathname} answered ${res?.status()}`);
		return res;
	};

	// Sign in.
	await page.goto(`${base}/console`);
	check(new URL(page.url()).pathname === "/console/login", `no session should land on the login, got ${page.url()}`);
	await page.getByLabel("Admin token").fill("not-the-token-0123456789abcdef0123456789");
	await page.getByRole("button", { name: "Sign in" }).click();
	check((await page.textContent("main"))?.includes("not the admin token"), "wrong token message");
	await page.getByLabel("Admin token").fill(TOKEN);
	await page.getByRole("button", { name: "Sign in" }).click();
	await page.waitForURL(`${base}/console`);
	check((await page.textContent("h1")) === "Overview", "overview after sign-in");
	step("signs in with the admin token (a wrong one is refused)");

	for (const [pathname, title] of [
		["/console", "Overview"],
		["/console/deliveries", "Deliveries"],
		["/console/resources", "Resources"],
		["/console/effects", "Effects"],
		["/console/reconcile", "Reconciliation"],
		["/console/alerts", "Alerts"],
		["/console/rejections", "Rejections"],
	] as const) {
		await open(page, pathname);
		check((await page.textContent("h1")) === title, `${pathname} heading`);
	}
	step("opens every page");

	// A signed delivery, as BlooBank would send it.
	const messageId = `browser-${Date.now()}`;
	const orderId = `ord-${messageId}`;
	const body = envelope("bloobank", messageId, {
		id: orderId,
		version: 1,
		status: "SUCCESS",
		amount: 4321,
		currency: "BRL",
		direction: "IN",
		at: Date.now() - 1500,
	});
	const sent = await fetch(`http://127.0.0.1:${port}/webhooks/bloobank`, {
		method: "POST",
		headers: {
			"content-type": "application/json",
			...(await signDelivery("bloobank", SECRET, body, messageId, Date.now())),
		},
		body,
	});
	check(sent.status === 200, `webhook answered ${sent.status}`);

	// Find it with the filter form, open it, wait for the consumer.
	await open(page, "/console/deliveries");
	await page.getByLabel("Message id").fill(messageId);
	await page.getByRole("button", { name: "Filter" }).click();
	await page.getByRole("link", { name: messageId }).click();
	check((await page.textContent("h1")) === `Delivery ${messageId}`, "delivery page");
	const statusOf = async () => (await page.locator("dt:text-is('Status') + dd").textContent())?.trim();
	await until("the delivery to be processed", async () => {
		await page.reload();
		return (await statusOf()) === "processed";
	});
	const attemptsOf = async () => Number(await page.locator("dt:text-is('Consumer attempts') + dd").textContent());
	check((await attemptsOf()) === 1, "processed once");
	check((await page.textContent("pre"))?.includes(`"messageId": "${messageId}"`), "pretty-printed body");
	step("sends a signed delivery, finds it by message id, sees it processed");

	await page.getByRole("button", { name: "Replay" }).click();
	check((await page.textContent("[role=status]"))?.includes("Replayed"), "replay flash");
	await until("the replay to be processed", async () => {
		await page.goto(`${base}/console/deliveries/bloobank/${messageId}`);
		return (await statusOf()) === "processed" && (await attemptsOf()) === 2;
	});
	step("replays it with the button: processed again (consumer attempts 2)");

	await open(page, `/console/resources?provider=bloobank&type=payment_order&id=${orderId}`);
	check((await page.textContent("h1")) === `payment_order ${orderId}`, "resource page");
	check((await page.locator("main table tbody tr").count()) === 1, "one delivery built the order");
	await open(page, "/console");
	const settled = await page.locator("dt:text-is('BRL') + dd").textContent();
	check(settled?.includes("4321 minor units, 1 orders"), `settled once, got ${settled}`);
	check((await page.locator("#h-eff + dl dt:text-is('Done') + dd").textContent())?.trim() === "1", "one effect done");
	step("the order's effect stayed once (settled total 4321 BRL, 1 order; 1 effect done)");

	await open(page, "/console/reconcile");
	const runsBefore = await page.locator("section.card").count();
	await page.getByRole("button", { name: "Start a run" }).click();
	check((await page.textContent("[role=status]")) !== null, "run flash");
	check((await page.locator("section.card").count()) === runsBefore + 1, "a new run is listed");
	step("starts a reconcile run from the button (listed with its windows or why it could not run)");

	await open(page, "/console");
	await page.screenshot({ path: path.join(ROOT, "docs", "console.png"), fullPage: true });
	step("screenshot of the overview saved to docs/console.png");

	check(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
	check(foreign.length === 0, `requests leaving the host: ${foreign.join(", ")}`);
	step("no page error, no request left the host");
	console.log(`browser suite: ${steps.length} steps passed`);
} catch (err) {
	console.error(devLog.slice(-4000));
	throw err;
} finally {
	await browser.close();
	if (dev.pid) process.kill(-dev.pid, "SIGTERM");
}
