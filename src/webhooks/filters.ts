/**
 * Webhook filters: `filters[event]` is a condition object; every key in it must match the event's data.
 * Each condition key has one matcher here; a new key is a new entry (and a property in
 * schemas/admin/webhook-filters.json). Unknown keys are refused when a webhook is written.
 */
type Matcher = (condition: unknown, data: Record<string, unknown>) => boolean;

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);

export const CONDITION_MATCHERS: Readonly<Record<string, Matcher>> = Object.freeze({
  /** Matches when the event's `roles` (array) or `role` (string) holds any of the listed roles. */
  roles: (condition, data) => {
    const wanted = strings(condition);
    const have = new Set([...strings(data.roles), ...strings(data.role)]);
    return wanted.some((r) => have.has(r));
  },
});

/**
 * The events whose data can satisfy each condition key. A condition on any other event could never
 * match and would silently stop its deliveries, so it is refused when a webhook is written (422).
 * Only role events carry `role`/`roles` today; user.* and auth.* carry `user_id` alone.
 */
export const CONDITION_EVENTS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  roles: ['role.assigned', 'role.unassigned'],
});

/** Problems with a webhook's filters that the schema cannot see: `{ 'filters.<event>.<key>': message }`. */
export function filterProblems(filters: Record<string, unknown> | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [event, cond] of Object.entries(filters ?? {})) {
    if (!cond || typeof cond !== 'object') continue;
    for (const key of Object.keys(cond)) {
      const events = CONDITION_EVENTS[key];
      if (events && !events.includes(event)) out[`filters.${event}.${key}`] = `can never match: ${event} events carry no ${key} (only ${events.join(', ')} do)`;
    }
  }
  return out;
}

/** True when the webhook has no condition for this event, or every condition key matches. */
export function filtersMatch(filters: Record<string, unknown> | null | undefined, event: string, data: Record<string, unknown>): boolean {
  const cond = filters?.[event];
  if (!cond || typeof cond !== 'object') return true;
  for (const [key, value] of Object.entries(cond as Record<string, unknown>)) {
    const m = CONDITION_MATCHERS[key];
    // A key written before its matcher was removed matches nothing: fail closed, never over-deliver.
    if (!m || !m(value, data)) return false;
  }
  return true;
}
