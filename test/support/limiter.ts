/** A stand-in for the Workers Rate Limiting binding: `limit` calls per key, counted. */
export function limiter(limit: number) {
	const used = new Map<string, number>();
	const binding: RateLimit = {
		limit: async ({ key }) => {
			const n = (used.get(key) ?? 0) + 1;
			used.set(key, n);
			return { success: n <= limit };
		},
	};
	return { binding, used };
}
