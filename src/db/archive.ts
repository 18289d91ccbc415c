/**
 * Where a settled delivery's raw body lives once it has left D1: one R2 object per delivery,
 * keyed by the dedupe key (provider, message id), which no other delivery can share
 * (docs/design.md, storage at scale). Moving bodies there is src/sweep/archive.ts; every reader
 * (the consumer, replay, the admin API) goes through readArchivedBody.
 */

export function archiveKey(provider: string, messageId: string): string {
	return `deliveries/${provider}/${encodeURIComponent(messageId)}`;
}

/**
 * The body of a delivery, from D1 while it is there, else from the archive. Null when it is kept
 * nowhere (pruned, or the archive's own lifecycle rule expired it, or the binding is gone); an R2
 * failure throws, so callers retry instead of taking a transient fault for a missing body.
 */
export async function storedBody(
	archive: R2Bucket | undefined,
	row: { provider: string; message_id: string; raw_body: string | null; archived_at: number | null },
): Promise<string | null> {
	if (row.raw_body !== null) return row.raw_body;
	if (row.archived_at === null || archive === undefined) return null;
	const object = await archive.get(archiveKey(row.provider, row.message_id));
	return object === null ? null : object.text();
}
