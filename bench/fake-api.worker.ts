/** The fake BlooBank API of the tests, served over loopback HTTP for npm run bench:reconcile. */
import { BASE_URL, FakeBlooBank } from "../fixtures/fake-bloobank";
import { remoteVersion, WALLET } from "./reconcile-orders";

const fake = new FakeBlooBank();

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
		const target = `${BASE_URL}${url.pathname.replace(/^\/txengine\/v1/, "")}${url.search}`;
		return fake.fetch(new Request(target, request));
	},
};
