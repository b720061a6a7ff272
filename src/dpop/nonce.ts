import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** Seconds one nonce window lasts; a nonce is accepted in its window and the next (60 to 120 s). */
export const NONCE_WINDOW = 60;

/**
 * Server-provided DPoP nonces (RFC 9449 8), stateless: a nonce is its window number and an HMAC of the
 * tenant and that window, so every process of every node accepts what another issued, with no Redis
 * read. The key is derived from the key-encryption key, which all nodes share.
 */
export class DpopNonces {
  private readonly key: Buffer;

  constructor(secret: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'svc dpop nonce v1', 32));
  }

  private mac(tenant: string, window: number): Buffer {
    return createHmac('sha256', this.key).update(`${tenant}\n${window}`).digest().subarray(0, 16);
  }

  /** The nonce to hand out now. */
  current(tenant: string, now = Date.now()): string {
    const w = Math.floor(now / 1000 / NONCE_WINDOW);
    return `${w.toString(36)}.${this.mac(tenant, w).toString('base64url')}`;
  }

  /** Whether a proof's nonce is one we issued for this tenant in this window or the one before. */
  valid(tenant: string, nonce: string | undefined, now = Date.now()): boolean {
    if (typeof nonce !== 'string' || nonce.length > 64) return false;
    const dot = nonce.indexOf('.');
    if (dot < 1) return false;
    const w = parseInt(nonce.slice(0, dot), 36);
    const current = Math.floor(now / 1000 / NONCE_WINDOW);
    if (!Number.isSafeInteger(w) || (w !== current && w !== current - 1)) return false;
    const given = Buffer.from(nonce.slice(dot + 1), 'base64url');
    const want = this.mac(tenant, w);
    return given.length === want.length && timingSafeEqual(given, want);
  }
}
