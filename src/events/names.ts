/** The sixteen webhook event names of the spec's Events part, in its order. */
export const EVENT_NAMES = [
  'user.created', 'user.updated', 'user.deleted', 'user.suspended', 'user.unsuspended',
  'auth.login', 'auth.login_failed', 'auth.logout', 'auth.password_changed', 'auth.mfa_enabled',
  'security.alert', 'security.suspicious_activity',
  'role.assigned', 'role.unassigned', 'policy.created', 'policy.updated',
] as const;

/**
 * Events beyond the spec's sixteen (docs/webhooks.md): `logging.quota_exceeded`, the notification of a
 * log quota evaluation that is not ok (issue 13; its outbox id is the evaluation's notification_event_id);
 * `control_plane.lookup_hmac_rotation`, each move of a lookup-key rotation (issue 14), in the tenant of
 * the platform administrator who started it.
 */
export const EXTENSION_EVENT_NAMES = ['logging.quota_exceeded', 'control_plane.lookup_hmac_rotation'] as const;

/**
 * Spec events svc accepts in webhook subscriptions but never emits (docs/decisions.md): it has no
 * passwords and no MFA. Nothing may declare them (test/events/declared-events.test.ts).
 */
export const UNEMITTED_EVENT_NAMES = ['auth.password_changed', 'auth.mfa_enabled'] as const satisfies ReadonlyArray<(typeof EVENT_NAMES)[number]>;

export type EventName = (typeof EVENT_NAMES)[number] | (typeof EXTENSION_EVENT_NAMES)[number];

const NAMES: ReadonlySet<string> = new Set<string>([...EVENT_NAMES, ...EXTENSION_EVENT_NAMES]);

export function isEventName(name: string): name is EventName {
  return NAMES.has(name);
}
