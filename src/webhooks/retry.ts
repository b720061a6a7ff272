/** Longest wait between two automatic attempts. */
export const MAX_BACKOFF_MS = 24 * 3600 * 1000;

/**
 * Delay before automatic retry number `retry` (1 for the first retry): retry_interval seconds doubled
 * per retry, capped at 24 hours, with +-20 % jitter so receivers recovering from an outage are not hit
 * by every delivery at once.
 */
export function backoffMs(retry: number, retryIntervalS: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_BACKOFF_MS, retryIntervalS * 1000 * 2 ** Math.max(0, retry - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}
