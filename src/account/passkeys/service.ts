import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Deps } from '../../deps.js';
import { Conflict, NotFound, ValidationError } from '../../errors.js';
import { declareEvents } from '../../events/declare.js';
import type { Session } from '../../login/sessions.js';
import type { PasskeyRow } from '../../store/passkeys.js';
import { requireRecent } from '../session.js';
import { providerOf } from './providers.js';
import { normalizeDeviceName } from './view.js';
import { authenticationOptions, PasskeyRefused, registrationOptions, relyingParty, verifyAssertion, verifyRegistration } from './webauthn.js';

/** Passkey changes change the user; a re-authentication is a login, a counter gone backwards an alert. */
const passkeyEvents = declareEvents(['user.updated', 'auth.login', 'security.alert']);

const notFound = () => new NotFound('not_found', 'No such passkey.');
const badName = () => new ValidationError({ device_name: ['must be 1 to 100 characters after trimming'] }, 'The name must be 1 to 100 characters.');

/** Whether the tenant lets users sign in with emailed codes. No tenant can turn them off yet, so always true. */
export function emailCodesEnabled(_tenantId: string): boolean { return true; }

/** Registration options for the session's user; the sign-in must be recent. */
export async function startRegistration(deps: Deps, session: Session) {
  requireRecent(session);
  const existing = await deps.store.forTenant(session.tenantId).passkeys.listForUser(session.userId);
  return registrationOptions(deps.redis, relyingParty(deps.config), { tenantId: session.tenantId, userId: session.userId, email: session.email, existing });
}

/** Verifies and stores a new passkey; its name defaults to the provider's name. Emits user.updated. */
export async function finishRegistration(deps: Deps, session: Session, response: RegistrationResponseJSON, deviceName?: string): Promise<PasskeyRow> {
  requireRecent(session);
  let name: string | null = null;
  if (deviceName !== undefined) { name = normalizeDeviceName(deviceName); if (name === null) throw badName(); }
  const cred = await verifyRegistration(deps.redis, relyingParty(deps.config), { tenantId: session.tenantId, userId: session.userId, response });
  name ??= providerOf(cred.aaguid)?.name ?? null;
  return deps.store.transaction(session.tenantId, async ({ passkeys }, tx) => {
    const row = await passkeys.insert({ ...cred, deviceName: name });
    if (!row) throw new Conflict('conflict', 'This passkey is already registered.');
    await passkeyEvents.emit(tx, session.tenantId, 'user.updated', { user_id: session.userId, change: 'passkey_added', passkey_id: row.id });
    return row;
  });
}

/** Renames one of the session user's passkeys; another user's or an unknown id is the same 404. */
export async function renamePasskey(deps: Deps, session: Session, id: string, raw: string): Promise<PasskeyRow> {
  const name = normalizeDeviceName(raw);
  if (name === null) throw badName();
  return deps.store.transaction(session.tenantId, async ({ passkeys }, tx) => {
    const row = await passkeys.rename(session.userId, id, name);
    if (!row) throw notFound();
    await passkeyEvents.emit(tx, session.tenantId, 'user.updated', { user_id: session.userId, change: 'passkey_renamed', passkey_id: row.id });
    return row;
  });
}

/**
 * Deletes a passkey. Needs a recent sign-in, and refuses to remove the user's last way to sign in
 * (the last passkey while the tenant does not offer email codes).
 */
export async function deletePasskey(deps: Deps, session: Session, id: string): Promise<void> {
  requireRecent(session);
  await deps.store.transaction(session.tenantId, async ({ passkeys }, tx) => {
    const row = await passkeys.getForUser(session.userId, id);
    if (!row) throw notFound();
    if (!emailCodesEnabled(session.tenantId) && (await passkeys.countForUser(session.userId)) <= 1) {
      throw new Conflict('conflict', 'This is your only way to sign in: add another passkey before deleting this one.');
    }
    await passkeys.delete(session.userId, id);
    await passkeyEvents.emit(tx, session.tenantId, 'user.updated', { user_id: session.userId, change: 'passkey_deleted', passkey_id: id });
  });
}

/** Options to confirm the session's user with one of their own passkeys (any session age). */
export async function startReauth(deps: Deps, session: Session) {
  const own = await deps.store.forTenant(session.tenantId).passkeys.listForUser(session.userId);
  if (!own.length) throw new PasskeyRefused('no_passkey', 'You have no passkey yet: confirm with an emailed code.');
  return authenticationOptions(deps.redis, relyingParty(deps.config), { kind: 'reauth', tenantId: session.tenantId, userId: session.userId }, own);
}

/**
 * Confirms the session's user with a passkey assertion: only the user's own credential counts, the
 * counter must move forward, and `auth.login` (method passkey, client `account`) is recorded. The caller
 * replaces the session with one carrying a fresh sign-in time.
 */
export async function finishReauth(deps: Deps, session: Session, response: AuthenticationResponseJSON): Promise<void> {
  const store = deps.store.forTenant(session.tenantId);
  const passkey = typeof response.id === 'string' ? await store.passkeys.findByCredentialId(response.id) : null;
  if (!passkey || passkey.user_id !== session.userId) throw new PasskeyRefused('unknown_credential', 'This passkey is not one of yours.');
  const out = await verifyAssertion(deps.redis, relyingParty(deps.config), { kind: 'reauth', tenantId: session.tenantId, userId: session.userId }, response, passkey);
  const moved = out.ok && await deps.store.transaction(session.tenantId, async ({ passkeys }, tx) => {
    if (!(await passkeys.recordUse(passkey.id, passkey.counter, out.newCounter, out.backedUp))) return false;
    await passkeyEvents.emit(tx, session.tenantId, 'auth.login', { user_id: session.userId, client_id: 'account', method: 'passkey', passkey_id: passkey.id });
    return true;
  });
  if (moved) return;
  const reason = out.ok ? 'counter_regression' : out.reason;
  if (reason === 'counter_regression') {
    await deps.store.transaction(session.tenantId, (_s, tx) => passkeyEvents.emit(tx, session.tenantId, 'security.alert', { user_id: session.userId, client_id: 'account', reason: 'passkey_counter_regression', passkey_id: passkey.id }));
  }
  throw new PasskeyRefused(reason);
}
