import { newId } from '../store/ids.js';
import { signatureHeader } from './signing.js';

/** The delivered body: `{event, timestamp (ISO 8601 UTC), data}` (spec, Events rule 1), stored with each delivery. */
export type { RequestBody } from '../store/webhooks.js';

/** Header names the service sets on every delivery; a webhook's custom headers may not use them. */
export const RESERVED_HEADER = /^(content-type|content-length|host|connection|transfer-encoding|x-svc-.*)$/i;

export const USER_AGENT = 'svc-webhooks/1';

/** A delivery id, also its X-Svc-Delivery header: the same across every attempt of one delivery. */
export function newDeliveryId(): string {
  return newId('whd');
}

/**
 * Headers of one attempt. X-Svc-Timestamp is the send time (so the signature is fresh per attempt);
 * X-Svc-Delivery stays the same across every attempt of one delivery so receivers can de-duplicate.
 */
export function deliveryHeaders(opts: { secret: string; event: string; deliveryId: string; body: string; custom: Record<string, string>; nowS?: number }): Record<string, string> {
  const ts = opts.nowS ?? Math.floor(Date.now() / 1000);
  const out: Record<string, string> = { 'User-Agent': USER_AGENT };
  for (const [k, v] of Object.entries(opts.custom)) if (!RESERVED_HEADER.test(k)) out[k] = v;
  out['Content-Type'] = 'application/json';
  out['X-Svc-Event'] = opts.event;
  out['X-Svc-Delivery'] = opts.deliveryId;
  out['X-Svc-Timestamp'] = String(ts);
  out['X-Svc-Signature'] = signatureHeader(opts.secret, ts, opts.body);
  return out;
}
