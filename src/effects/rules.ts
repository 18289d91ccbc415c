/**
 * What side effects are: their kinds and payload. Which resource states imply which is declared
 * per (provider, resource type) in the provider's file (`effects`), so no other sender's events
 * can fire them or move the settled totals (docs/design.md, side effects). The outbox keeps one row per
 * (resource, kind): first observation only.
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

/** The payload of an effect of `r`: amount, currency and direction when its data carries them. */
export function effectPayload(provider: ProviderName, r: ResourceSnapshot): EffectPayload {
	return {
		provider,
		type: r.type,
		id: r.id,
		wallet: r.wallet,
		version: r.version,
		status: r.status,
		amount: field(r.data, "amount", isInt),
		currency: field(r.data, "currency", isString),
		direction: field(r.data, "direction", isString),
	};
}
