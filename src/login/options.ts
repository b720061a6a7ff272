/**
 * Login settings in one place, each next to its default. They are constants rather than environment
 * settings so the hot path reads no configuration; change them here (see docs/login.md).
 */
export const LOGIN = {
  /** Digits of an emailed one-time code. */
  codeLength: 6,
  /** Seconds a one-time code stays valid. */
  codeTtlSeconds: 300,
  /** Wrong guesses after which a code is burned (the last one burns it). */
  codeMaxAttempts: 5,
  /** Failed code verifications (wrong, burned or no code) allowed per address and per client IP in 15 minutes, across codes and processes. */
  verifyFailuresPerAddress: 20,
  verifyFailuresPerIp: 100,
  verifyFailureWindowSeconds: 900,
  /** Codes sent to one address per window. */
  perAddressLimit: 5,
  perAddressWindowSeconds: 600,
  // Codes per client address per minute: LOGIN_IP_LIMIT_PER_MINUTE (config.ts, default 300).
  /** Seconds a pending authorization request (the login page's state) is kept. */
  interactionTtlSeconds: 900,
  /** Seconds a login session lives (absolute, not sliding). */
  sessionTtlSeconds: 8 * 3600,
  /** Seconds an authorization code can be redeemed (RFC 6749 4.1.2 recommends at most 10 minutes). */
  authCodeTtlSeconds: 60,
  /** Seconds a redeemed code is remembered so a replay is detected and what it issued revoked. */
  authCodeReplayWindowSeconds: 600,
  /** Seconds the consent cache entry lives in Redis (Postgres holds the record). */
  consentCacheSeconds: 3600,
  /** Lifetime of ID tokens. */
  idTokenTtlSeconds: 3600,
  /** Versions recorded with each consent. */
  policyVersions: { privacyPolicyVersion: '2024-01', tosVersion: '2024-01', consentVersion: 1 },
} as const;

export const SESSION_COOKIE = 'svc_session';
export const CSRF_COOKIE = 'svc_csrf';
