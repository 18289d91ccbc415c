/**
 * Which side effects a resource state implies (docs/providers.md 1.4). Rules are declared per
 * (provider, resource type) in the provider's file (`effects`); the template declares BlooBank's
 * payment orders only, so no other sender can fire these or move the settled totals
 * (docs/design.md, effects). The outbox keeps one row per (resource, kind): first observation only.
 */
import type { ProviderName, ResourceSnapshot } from "../providers/model";

export type EffectKind = "settled" | "payment_failed" | "hold_released";

export interface EffectSeed {
	kind: EffectKind;
	payload: EffectPayload;
}

/** What an effect handler gets to see: the resource as first observed in that state. */
export interface EffectPayload {
	provider: ProviderName;
	type: string;
	id: string;
	wallet: string | null;
	version: number;
	status: string;
	amount: number | null;
	currency: string | null;
	direction: string | null;
}

function field<T>(data: unknown, key: string, check: (v: unknown) => v is T): T | null {
	if (typeof data !== "object" || data === null) return null;
	const value = (data as Record<string, unknown>)[key];
	return check(value) ? value : null;
}
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);
const isString = (v: unknown): v is string => typeof v === "string";

/** BlooBank payment orders (declared in src/providers/bloobank.ts). */
export function paymentOrderEffects(r: ResourceSnapshot): EffectSeed[] {
	const payload: EffectPayload = {
		provider: "bloobank",
		type: r.type,
		id: r.id,
		wallet: r.wallet,
		version: r.version,
		status: r.status,
		amount: field(r.data, "amount", isInt),
		currency: field(r.data, "currency", isString),
		direction: field(r.data, "direction", isString),
	};
	switch (r.status) {
		case "SUCCESS":
		// REFUNDED only ever follows SUCCESS (docs/providers.md 1.4): an order first seen refunded (its
		// SUCCESS event late or lost) was still settled once. This keeps totals independent of the
		// order in which events arrive.
		case "REFUNDED":
			return [{ kind: "settled", payload }];
		case "FAILED":
			return [{ kind: "payment_failed", payload }];
		case "EXPIRED":
		case "CANCELED":
			return [{ kind: "hold_released", payload }];
		default:
			return [];
	}
}
