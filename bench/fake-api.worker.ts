/** The fake of the reconciled sender's API (fixtures/fake-api.ts), served over loopback HTTP for npm run bench:reconcile. */
import { BASE_URL, FakeApi } from "../fixtures/fake-api";
import { remoteVersion, WALLET } from "./reconcile-orders";

const fake = new FakeApi();

export default {
	async fetch(request: Request): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname === "/seed") {
			const n = Number(url.searchParams.get("n") ?? 0);
			fake.orders = [];
			// Spread over the last 5 hours: one 6-hour window per wallet.
			fake.seed(n, (i) => ({ ordVersion: remoteVersion(i) }), WALLET, Date.now() - 5 * 60 * 60_000);
			return Response.json({ seeded: fake.orders.length });
		}
		// Re-root the request onto the fake's base URL; the signature covers path and query, which do not change.
		const basePath = new URL(BASE_URL).pathname;
		const rest = url.pathname.startsWith(basePath) ? url.pathname.slice(basePath.length) : url.pathname;
		const target = `${BASE_URL}${rest}${url.search}`;
		return fake.fetch(new Request(target, request));
	},
};
