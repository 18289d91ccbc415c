/**
 * YOUR BUSINESS LOGIC GOES HERE: what happens the first time an order reaches a state.
 *
 * Each handler has up to two parts:
 * - `run`: external work (HTTP calls, emails). Runs after the state change committed, and again
 *   on retry if it throws or the worker dies before the effect is marked done: at-least-once.
 *   Send `effect.id` as an idempotency key to whatever you call.
 * - `writes`: D1 statements committed in the same transaction that marks the effect done:
 *   exactly once, even if two executors race.
 * A handler that throws leaves the effect `pending`; the sweep cron retries it with backoff, and
 * after EFFECT_MAX_ATTEMPTS (src/effects/executor.ts) marks it `failed`, alerts, and leaves it to
 * `POST /admin/effects/:id/retry`.
 */
import { addSettled } from "../db/settled-totals";
import type { Config, Env } from "../env";
import { log } from "../log";
import { postAlert } from "../notify";
import type { EffectKind, EffectPayload } from "./rules";

export interface Effect {
	id: number;
	kind: EffectKind;
	attempts: number;
	payload: EffectPayload;
}

export interface EffectContext {
	env: Env;
	config: Config;
}

export interface EffectHandler {
	run?(effect: Effect, ctx: EffectContext): Promise<void>;
	writes?(effect: Effect, db: D1Database): D1PreparedStatement[];
}

export const handlers: Record<EffectKind, EffectHandler> = {
	settled: {
		// e.g. mark the invoice paid: `run: async (effect) => { await markInvoicePaid(effect.payload.id, effect.id) }`
		writes(effect, db) {
			const { currency, amount } = effect.payload;
			if (currency === null || amount === null) throw new Error("settled order has no amount or currency");
			return [addSettled(db, currency, amount)];
		},
	},
	payment_failed: {
		async run(effect, ctx) {
			const p = effect.payload;
			log("warn", "alert_payment_failed", {
				provider: p.provider,
				orderId: p.id,
				wallet: p.wallet,
				version: p.version,
			});
			const amount = p.amount !== null && p.currency !== null ? `, ${p.amount} ${p.currency}` : "";
			await postAlert(
				ctx.config,
				`payment failed: ${p.provider} ${p.type} ${p.id}${p.wallet ? ` (wallet ${p.wallet})` : ""} v${p.version}${amount}`,
				{ alert: "payment_failed", order: p },
				`effect-${effect.id}`,
			);
		},
	},
	hold_released: {
		// The effect row marked done is the record that the hold was released; add your own release here.
		async run(effect) {
			log("info", "hold_released", { provider: effect.payload.provider, orderId: effect.payload.id });
		},
	},
};
