/** Wiring only: the three entry points of the Worker. */
import { createApp } from "./app";
import { consumeDeadLetters, consumeEvents } from "./apply/consumer";
import { DAILY_RECONCILE_CRON } from "./cron";
import { type Config, ConfigError, type Env, getConfig, reconcileEnabled } from "./env";
import { log } from "./log";
import { QUEUE_NAMES, type QueueMessage, type ReconcileJob } from "./queue/messages";
import { startRun } from "./reconcile/planner";
import { consumeReconcile } from "./reconcile/window";
import { sweep } from "./sweep/sweep";

const app = createApp();

export default {
	fetch: app.fetch,

	async queue(batch, env, _ctx) {
		switch (batch.queue) {
			case QUEUE_NAMES.events:
				return consumeEvents(batch as MessageBatch<QueueMessage>, env);
			// Needs no configuration, so a broken variable cannot make dead letters pile up unrecorded.
			case QUEUE_NAMES.eventsDeadLetter:
				return consumeDeadLetters(batch as MessageBatch<QueueMessage>, env);
			case QUEUE_NAMES.reconcile:
				return consumeReconcile(batch as MessageBatch<ReconcileJob>, env);
			default:
				// Retrying cannot help a message nobody here consumes; keep it visible in the log.
				log("error", "unknown_queue", { queue: batch.queue, messages: batch.messages.length });
				batch.ackAll();
		}
	},

	async scheduled(controller, env, _ctx) {
		if (controller.cron === DAILY_RECONCILE_CRON) {
			// A merchant who never set BLOOBANK_WALLETS gets no failed run a day; /admin/reconcile still reports why.
			if (reconcileEnabled(env)) await startRun(env, "cron", controller.scheduledTime);
			else log("info", "reconcile_off", { reason: "BLOOBANK_WALLETS is empty" });
			return;
		}
		let config: Config;
		try {
			config = getConfig(env);
		} catch (err) {
			if (!(err instanceof ConfigError)) throw err;
			// Nothing the sweep would re-send can be applied until this is fixed; say so every tick.
			log("error", "config_error", { variable: err.variable, error: err.message });
			return;
		}
		await sweep(env, config, controller.scheduledTime);
	},
} satisfies ExportedHandler<Env, QueueMessage | ReconcileJob>;
