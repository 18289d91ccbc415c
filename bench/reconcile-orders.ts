/**
 * The orders of npm run bench:reconcile, as the fake API lists them and as the local shards hold
 * them: order i is `ord_w1_<i>` (FakeApi.seed, fixtures/fake-api.ts, numbers from 0 after a
 * reset). Locally, one in ten is missing and one in ten is a version behind, so a fifth of every
 * page drifts: each page then costs its version lookups and a sendBatch, the most a page can cost.
 */
export const WALLET = "w1";

export const orderId = (i: number) => `ord_${WALLET}_${i}`;

/** The fake API's version of order i. */
export const remoteVersion = (i: number) => 2 + (i % 3);

/** The local version of order i, or null when the local shards do not have it. */
export function localVersion(i: number): number | null {
	if (i % 10 === 0) return null;
	if (i % 10 === 5) return remoteVersion(i) - 1;
	return remoteVersion(i);
}

/** How many of orders 0..n-1 reconciliation must send to be applied (missing or behind). */
export function expectedDrift(n: number): number {
	let drift = 0;
	for (let i = 0; i < n; i++) {
		const v = localVersion(i);
		if (v === null || v < remoteVersion(i)) drift++;
	}
	return drift;
}
