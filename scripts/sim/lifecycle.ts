/** Seeded generation of payment-order lifecycles (docs/providers.md 1.4 statuses). */
import type { SimState } from "./signing";

/** mulberry32: a small, seedable PRNG, so a run can be repeated exactly. */
export function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

export function pick<T>(random: () => number, xs: readonly T[]): T {
	return xs[Math.floor(random() * xs.length)] as T;
}

export function shuffle<T>(random: () => number, xs: T[]): T[] {
	for (let i = xs.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
	}
	return xs;
}

/** IN: PENDING -> PROCESSING -> SUCCESS/EXPIRED/FAILED; OUT: AWAITING_APPROVAL -> PENDING -> PROCESSING -> SUCCESS/FAILED. */
export function lifecycle(random: () => number, id: string, startMs: number): SimState[] {
	const direction = random() < 0.5 ? "IN" : "OUT";
	const path =
		direction === "IN"
			? ["PENDING", "PROCESSING", pick(random, ["SUCCESS", "SUCCESS", "EXPIRED", "FAILED"])]
			: ["AWAITING_APPROVAL", "PENDING", "PROCESSING", pick(random, ["SUCCESS", "SUCCESS", "FAILED"])];
	const amount = 100 + Math.floor(random() * 100_000);
	const currency = pick(random, ["BRL", "BRL", "USD"]);
	return path.map((status, i) => ({ id, version: i + 1, status, amount, currency, direction, at: startMs + i * 1000 }));
}
