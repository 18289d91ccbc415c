/** The simulator (scripts/sim/simulate.ts) played against the Worker inside the test, its queue drained by the consumer. */
import { type SimOptions, type SimReport, simulate } from "../../scripts/sim/simulate";
import type { QueueMessage } from "../../src/queue/messages";
import { consume } from "./apply";
import { call, type Harness } from "./worker";

/** No real sleeps (the schedule is still followed); settles by consuming every message sent so far. */
export async function simulateLocally(h: Harness, options: Omit<SimOptions, "url">): Promise<SimReport> {
	let drained = 0;
	return simulate(
		{ url: "https://receiver.test", ...options },
		{
			fetch: (req) => call(h, req),
			sleep: async () => {},
			now: () => Date.now(),
			settle: async () => {
				while (drained < h.events.sent.length) {
					const batch = h.events.sent.slice(drained, drained + 100) as QueueMessage[];
					drained += batch.length;
					await consume(h, batch);
				}
			},
		},
	);
}
