/** The sixteen webhook event names of the spec's Events part, in its order. */
export const EVENT_NAMES = [
  'user.created', 'user.updated', 'user.deleted', 'user.suspended', 'user.unsuspended',
  'auth.login', 'auth.login_failed', 'auth.logout', 'auth.password_changed', 'auth.mfa_enabled',
  'security.alert', 'security.suspicious_activity',
  'role.assigned', 'role.unassigned', 'policy.created', 'policy.updated',
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

const NAMES: ReadonlySet<string> = new Set(EVENT_NAMES);

export function isEventName(name: string): name is EventName {
  return NAMES.has(name);
}
