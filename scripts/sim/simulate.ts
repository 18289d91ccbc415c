/**
 * The simulation engine: plays a provider against a receiver the way the provider documents its
 * delivery (duplicates, no ordering, redelivery on 5xx and timeouts on the provider's schedule,
 * 4xx permanent where the provider says so), then reads the receiver's admin API and compares
 * every resource with the simulated truth. I/O is injected, so the same engine runs from the CLI
 * and inside the test suite.
 */
import { lifecycle, prng, shuffle } from "./lifecycle";
import {
	envelope,
	expectedResource,
	SIMULATED_PREFIX,
	type SimProvider,
	type SimState,
	senderOf,
	signDelivery,
} from "./signing";

export interface SimOptions {
	url: string;
	provider: SimProvider;
	secret: string;
	adminToken: string | null;
	orders: number;
	concurrency: number;
	duplicateRate: number;
	seed: number;
	/** Divides the provider's retry delays: 1000 turns "10 s" into 10 ms. */
	timeScale: number;
	pathToken?: string | null;
	/** The receiver's value of the provider's key encoding variable (see encodingVariable()). */
	keyEncoding?: "utf8" | "base64";
}

export interface SimDeps {
	fetch: (request: Request) => Promise<Response>;
	sleep: (ms: number) => Promise<void>;
	now: () => number;
	onProgress?: (done: number, total: number) => void;
	/** Resolves once the receiver has applied what it acknowledged. */
	settle: () => Promise<void>;
}

export interface Mismatch {
	id: string;
	expected: { version: number; status: string };
	actual: { version: number; status: string } | null;
}

export interface SimReport {
	provider: SimProvider;
	orders: number;
	deliveries: number;
	duplicatesSent: number;
	attempts: number;
	acked: number;
	retried: number;
	permanentFailures: number;
	statusCounts: Record<string, number>;
	verified: boolean;
	mismatches: Mismatch[];
}

interface Delivery {
	messageId: string;
	state: SimState;
}

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
	let next = 0;
	const runners = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
		while (next < items.length) await work(items[next++] as T);
	});
	await Promise.all(runners);
}

export async function simulate(o: SimOptions, deps: SimDeps): Promise<SimReport> {
	const random = prng(o.seed);
	// When the sender redelivers and whether a 4xx ends it: declared in its provider file.
	const schedule = senderOf(o.provider).retries;
	const start = deps.now() - 60 * 60_000;
	const truth = Array.from({ length: o.orders }, (_, i) =>
		lifecycle(random, `${SIMULATED_PREFIX}${o.seed}_${i}`, start + i * 10),
	);
	const deliveries: Delivery[] = truth.flatMap((states) =>
		states.map((state) => ({ messageId: `${state.id}-v${state.version}`, state })),
	);
	const planned = deliveries.length;
	for (const d of deliveries.slice()) if (random() < o.duplicateRate) deliveries.push(d);
	shuffle(random, deliveries);

	const report: SimReport = {
		provider: o.provider,
		orders: o.orders,
		deliveries: planned,
		duplicatesSent: deliveries.length - planned,
		attempts: 0,
		acked: 0,
		retried: 0,
		permanentFailures: 0,
		statusCounts: {},
		verified: false,
		mismatches: [],
	};
	const endpoint = `${o.url.replace(/\/$/, "")}/webhooks/${o.provider}${o.pathToken ? `/${o.pathToken}` : ""}`;
	let done = 0;

	await pool(deliveries, o.concurrency, async (d) => {
		for (let attempt = 1; ; attempt++) {
			const body = envelope(o.provider, d.messageId, d.state, attempt);
			const headers = await signDelivery(o.provider, o.secret, body, d.messageId, deps.now(), attempt, o.keyEncoding);
			report.attempts++;
			let status: number;
			try {
				const res = await deps.fetch(
					new Request(endpoint, {
						method: "POST",
						headers: { "content-type": "application/json", ...headers },
						body,
						signal: AbortSignal.timeout(schedule.timeoutMs),
					}),
				);
				await res.arrayBuffer();
				status = res.status;
			} catch {
				status = 0; // network error or timeout: retried like a 5xx
			}
			report.statusCounts[String(status)] = (report.statusCounts[String(status)] ?? 0) + 1;
			if (status >= 200 && status < 300) {
				report.acked++;
				break;
			}
			const permanent = status >= 400 && status < 500 && schedule.fourXxPermanent;
			const delay = schedule.delays[attempt - 1];
			if (permanent || delay === undefined) {
				report.permanentFailures++;
				break;
			}
			report.retried++;
			const [lo, hi] = schedule.jitter;
			await deps.sleep((delay * 1000 * (lo + random() * (hi - lo))) / o.timeScale);
		}
		deps.onProgress?.(++done, deliveries.length);
	});

	if (o.adminToken === null) return report;
	await deps.settle();
	const admin = o.url.replace(/\/$/, "");
	await pool(truth, o.concurrency, async (states) => {
		const last = states.at(-1) as SimState;
		const want = expectedResource(o.provider, last);
		const res = await deps.fetch(
			new Request(`${admin}/admin/resources/${o.provider}/${want.type}/${encodeURIComponent(want.id)}`, {
				headers: { authorization: `Bearer ${o.adminToken}` },
			}),
		);
		let got: { version: number; status: string } | null = null;
		if (res.status === 200) got = (await res.json()) as { version: number; status: string };
		else await res.arrayBuffer();
		if (!got || got.version !== want.version || got.status !== want.status) {
			report.mismatches.push({
				id: want.id,
				expected: { version: want.version, status: want.status },
				actual: got && { version: got.version, status: got.status },
			});
		}
	});
	report.verified = true;
	return report;
}
