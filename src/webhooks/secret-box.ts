import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { randomToken } from '../store/ids.js';

// AES-256-GCM: iv (12) | tag (16) | ciphertext. The AAD binds a sealed secret to its tenant and
// webhook, so a ciphertext copied to another row does not decrypt.
const IV = 12;
const TAG = 16;

/** A new signing secret: "whsec_" and 32 random bytes in base64url. Shown once, in the create response. */
export function generateSecret(): string {
  return `whsec_${randomToken(32)}`;
}

export function sealSecret(kek: Buffer, aad: string, secret: string): Buffer {
  const iv = randomBytes(IV);
  const c = createCipheriv('aes-256-gcm', kek, iv);
  c.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([c.update(secret, 'utf8'), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), ct]);
}

export function openSecret(kek: Buffer, aad: string, sealed: Buffer): string {
  const d = createDecipheriv('aes-256-gcm', kek, sealed.subarray(0, IV));
  d.setAAD(Buffer.from(aad, 'utf8'));
  d.setAuthTag(sealed.subarray(IV, IV + TAG));
  return Buffer.concat([d.update(sealed.subarray(IV + TAG)), d.final()]).toString('utf8');
}

export function secretAad(tenantId: string, webhookId: string): string {
  return `webhook-secret:${tenantId}:${webhookId}`;
}

/** Seals a webhook's signing secret to its tenant and id, as stored in `webhooks.secret_enc`. */
export function sealWebhookSecret(kek: Buffer, tenantId: string, webhookId: string, secret: string): Buffer {
  return sealSecret(kek, secretAad(tenantId, webhookId), secret);
}

/** The signing secret of a stored webhook. */
export function webhookSecret(w: { tenant_id: string; id: string; secret_enc: Buffer }, kek: Buffer): string {
  return openSecret(kek, secretAad(w.tenant_id, w.id), w.secret_enc);
}
