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
