import { createRequire } from 'node:module';

/** The spec's passkey `provider` object: who made the authenticator, for display only. */
export interface Provider { aaguid: string; name: string | null; icon_dark: string | null; icon_light: string | null; known: boolean }

const ZERO = '00000000-0000-0000-0000-000000000000';
// The `aaguids` package (MIT, darthmaim/aaguids, built from the community passkey-authenticator-aaguids
// list) maps AAGUIDs to names only; it carries no icons, so icons are null. Refresh: bump the package.
const NAMES = createRequire(import.meta.url)('aaguids/aaguids.json') as Record<string, string>;

/** An AAGUID as stored: lower-case, or null when missing or all zero (no provider information). */
export function normalizeAaguid(aaguid: string | null | undefined): string | null {
  if (!aaguid) return null;
  const a = aaguid.toLowerCase();
  return a === ZERO || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(a) ? null : a;
}

/** The provider of an AAGUID: null without one, `known: false` when the table does not name it. */
export function providerOf(aaguid: string | null): Provider | null {
  const a = normalizeAaguid(aaguid);
  if (!a) return null;
  const name = NAMES[a];
  return { aaguid: a, name: name ?? null, icon_dark: null, icon_light: null, known: name !== undefined };
}
