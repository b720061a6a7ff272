/**
 * Device authorization grant (RFC 8628) limits, each next to its default. The lifetime and the starting
 * interval are configuration (DEVICE_CODE_TTL_SECONDS, DEVICE_POLL_INTERVAL_SECONDS; a tenant may
 * shorten the lifetime with `device_code_ttl`); docs/decisions.md says why each value.
 */
export const DEVICE = {
  /** Seconds a slow_down adds to the interval, for that poll and every later one (RFC 8628 3.5). */
  slowDownStepSeconds: 5,
  /** Seconds a record is kept after its code expired or was used, so late polls get expired_token or invalid_grant. */
  keepAfterExpirySeconds: 600,
  /** Device authorizations one client address may start per client per minute (each holds Redis state until it expires); then 429. */
  authorizationsPerSourcePerMinute: 30,
  /** Wrong user codes one client address may enter per window, across processes; then 429. */
  entryFailuresPerSource: 20,
  entryFailureWindowSeconds: 900,
  /** Times one user code may be entered; past it the device authorization is refused (access_denied). */
  entriesPerDeviceCode: 5,
} as const;
