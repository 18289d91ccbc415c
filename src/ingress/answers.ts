/**
 * Every way a webhook request can end, and its answer: docs/design.md invariant 9 on one screen.
 * 4xx only when the request is certainly not a genuine delivery, because a sender may never retry
 * a 4xx (docs/providers.md 1.1); whatever is our fault or may be temporary is 5xx, so the sender
 * retries; rate limiting is 503, never 429. Nothing else in the code picks a status code.
 */

import type { VerifyFailure } from "../providers/signature";
import type { ParseFailure } from "../providers/types";

export type Outcome = "accepted" | "resent" | "duplicate" | "ignored" | "rejected" | "unavailable";

export type Ending =
	/** Stored and its pointer sent (new), or sent again (a re-send of a row not yet on the queue). */
	| "accepted"
	| "resent"
	/** Stored before; or stored now as an event we do not model. */
	| "duplicate"
	| "ignored"
	/** The path is not a route: an unknown name, or a missing/wrong WEBHOOK_PATH_TOKEN. */
	| "bad_path"
	| "unknown_provider"
	/** A known sender whose secrets are unset: our configuration, so the sender keeps retrying. */
	| "provider_not_configured"
	/** Outside ALLOWED_SOURCE_CIDRS: a stale list must not fail genuine deliveries for good. */
	| "source_not_allowed"
	| "rate_limited"
	/** DB_SHARDS reordered or grown after data was placed (src/db/shards.ts): ours to put back. */
	| "config_error"
	| "too_large"
	| VerifyFailure
	/** Signed, but nothing to store under a dedupe key: retried until the code can read it. */
	| "invalid_utf8"
	| ParseFailure
	| "d1_error"
	| "queue_error";

interface Answer {
	status: 200 | 401 | 404 | 413 | 500 | 503;
	outcome: Outcome;
}

const SIGNATURE: Answer = { status: 401, outcome: "rejected" };
const UNREADABLE: Answer = { status: 500, outcome: "rejected" };

export const ANSWERS: Readonly<Record<Ending, Answer>> = {
	accepted: { status: 200, outcome: "accepted" },
	resent: { status: 200, outcome: "resent" },
	duplicate: { status: 200, outcome: "duplicate" },
	ignored: { status: 200, outcome: "ignored" },
	bad_path: { status: 404, outcome: "rejected" },
	unknown_provider: { status: 404, outcome: "rejected" },
	provider_not_configured: { status: 503, outcome: "rejected" },
	source_not_allowed: { status: 503, outcome: "rejected" },
	rate_limited: { status: 503, outcome: "unavailable" },
	config_error: { status: 503, outcome: "rejected" },
	too_large: { status: 413, outcome: "rejected" },
	missing_signature: SIGNATURE,
	malformed_signature: SIGNATURE,
	missing_timestamp: SIGNATURE,
	malformed_timestamp: SIGNATURE,
	timestamp_mismatch: SIGNATURE,
	timestamp_out_of_tolerance: SIGNATURE,
	no_supported_signature: SIGNATURE,
	signature_mismatch: SIGNATURE,
	invalid_utf8: UNREADABLE,
	invalid_json: UNREADABLE,
	not_an_object: UNREADABLE,
	missing_message_id: UNREADABLE,
	d1_error: { status: 503, outcome: "unavailable" },
	queue_error: { status: 503, outcome: "unavailable" },
};

/** Seconds a sender should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 10;
