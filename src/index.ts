/** Wiring only: the three entry points of the Worker. */
import { createApp } from "./app";
import { consumeDeadLetters, consumeEvents } from "./apply/consumer";
import { DAILY_RECONCILE_CRON } from "./cron";
import {
	alertOnlyConfig,
	type Config,
	ConfigError,
	type Env,
	getConfig,
	getShards,
	reconcileEnabled,
	reconcileOffReason,
} from "./env";
import { log } from "./log";
import { QUEUE_NAMES, type QueueMessage, type ReconcileJob } from "./queue/messages";
import { consumeReconcileDeadLetters } from "./reconcile/dead-letters";
import { startRun } from "./reconcile/planner";
import { consumeReconcile } from "./reconcile/window";
import { runAlerts } from "./sweep/alerts";
import { sweep } from "./sweep/sweep";

const app = createApp();
const UNKNOWN_QUEUE_RETRY_SECONDS = 300;

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
			case QUEUE_NAMES.reconcileDeadLetter:
				return consumeReconcileDeadLetters(batch as MessageBatch<ReconcileJob>, env);
			default:
				// A queue wrangler.toml routes here under a name the code does not know (renamed in one place):
				// never ack, so the messages wait for the fix, or reach that queue's dead-letter queue.
				log("error", "unknown_queue", { queue: batch.queue, messages: batch.messages.length });
				batch.retryAll({ delaySeconds: UNKNOWN_QUEUE_RETRY_SECONDS });
		}
	},

	async scheduled(controller, env, _ctx) {
		if (controller.cron === DAILY_RECONCILE_CRON) {
			// A merchant who listed no account to reconcile gets no failed run a day; /admin/reconcile still reports why.
			if (reconcileEnabled(env)) await startRun(env, "cron", controller.scheduledTime);
			else log("info", "reconcile_off", { reason: reconcileOffReason() });
			return;
		}
		let config: Config;
		try {
			config = getConfig(env);
			getShards(env);
		} catch (err) {
			if (!(err instanceof ConfigError)) throw err;
			// Nothing the sweep would re-send can be applied until this is fixed: only the alerts run
			// (`config_error` fires), and the log says it every tick.
			log("error", "config_error", { variable: err.variable, error: err.message });
			await runAlerts(env, alertOnlyConfig(env), controller.scheduledTime);
			return;
		}
		await sweep(env, config, controller.scheduledTime);
	},
} satisfies ExportedHandler<Env, QueueMessage | ReconcileJob>;
