import { createHmac, timingSafeEqual } from 'node:crypto';

/** `sha256=<hex HMAC-SHA-256 of "<timestamp>.<body>">` keyed by the webhook secret (spec, Events rule 3). */
export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * Receiver-side check (the same code as in docs/webhooks.md): recomputes the signature, compares in
 * constant time and refuses timestamps further than toleranceS from now.
 */
export function verifySignature(secret: string, header: string | undefined, timestamp: string | undefined, body: string, toleranceS = 300, nowS = Math.floor(Date.now() / 1000)): boolean {
  if (!header || !timestamp || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowS - Number(timestamp)) > toleranceS) return false;
  const expected = Buffer.from(signatureHeader(secret, Number(timestamp), body));
  const got = Buffer.from(header);
  return got.length === expected.length && timingSafeEqual(got, expected);
}
