/** Seconds a sender should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 10;
