import type { PasskeyRow } from '../../store/passkeys.js';
import { providerOf } from './providers.js';

/** The spec's `passkey` object. Never the credential id or public key. */
export function passkeyView(r: PasskeyRow): Record<string, unknown> {
  return { id: r.id, device_name: r.device_name, aaguid: r.aaguid, provider: providerOf(r.aaguid), created_at: r.created_at, last_used_at: r.last_used_at };
}

/**
 * A device name as stored: trimmed, inner whitespace (and control characters) collapsed to one space;
 * null when the result is not 1 to 100 characters.
 */
export function normalizeDeviceName(raw: string): string | null {
  const s = raw.replace(/[\s\p{Cc}]+/gu, ' ').trim();
  const length = [...s].length;
  return length >= 1 && length <= 100 ? s : null;
}
