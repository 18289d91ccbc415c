/** The two crons of wrangler.toml, told apart by `controller.cron`. */
export const SWEEP_CRON = "* * * * *";
export const DAILY_RECONCILE_CRON = "17 3 * * *";
