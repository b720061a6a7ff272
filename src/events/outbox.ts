import { insertLogRecords } from '../store/log-archive.js';
import type { Sql, TxSql } from '../sql.js';
import { currentTraceparent, traceparentOf, tracingOn } from '../tracing/tracer.js';
import { traceOf } from '../tracing/under.js';
import { isEventName, type EventName } from './names.js';
import { sealFields } from '../sealed-fields.js';

/** Channel the relay LISTENs on (the outbox insert trigger of migration 0040 names it too); delivered at commit. */
export const OUTBOX_CHANNEL = 'svc_outbox';

export interface DomainEvent {
  tenantId: string;
  event: EventName;
  /** Event payload; user events carry `user_id`, role events `user_id` and `role`/`roles`. */
  data: Record<string, unknown>;
}

/**
 * Writes an event to the outbox inside the caller's transaction, so the event exists if and only if
 * the change that caused it committed. The relay delivers it to the tenant's matching webhooks; the
 * insert trigger (migration 0040) wakes it at commit.
 */
export async function recordEvent(tx: TxSql, e: DomainEvent): Promise<void> {
  await recordEvents(tx, [e]);
}

/** Several events of one change in one statement (one round trip). */
export async function recordEvents(tx: TxSql, events: DomainEvent[]): Promise<void> {
  for (const e of events) {
    if (!isEventName(e.event)) throw new TypeError(`unknown event name "${String(e.event)}"`);
    if (typeof e.tenantId !== 'string' || e.tenantId === '') throw new TypeError('recordEvent needs a tenantId');
    if (e.data === null || typeof e.data !== 'object' || Array.isArray(e.data)) throw new TypeError('event data must be an object');
  }
  // An empty insert would still fire the outbox trigger's NOTIFY.
  if (!events.length) return;
  // Addresses in event data are sealed at rest; the webhook worker opens them for the receiver.
  events = events.map((e) => ({ ...e, data: sealFields(e.tenantId, e.data) }));
  // In order: ids follow the array, so receivers see user.created before auth.login.
  // The request's trace, when sampled, goes with the event to its webhook deliveries (src/tracing/).
  const trace = tracingOn ? traceparentFor(tx) : null;
  const outbox = tx`insert into event_outbox (tenant_id, event, data, trace_context)
           select t, e, d::jsonb, ${trace}::text from unnest(${events.map((e) => e.tenantId)}::text[], ${events.map((e) => e.event)}::text[], ${events.map((e) => JSON.stringify(e.data))}::text[])
           with ordinality as x(t, e, d, n) order by n`;
  // Auth and security events are log records too, written in the same transaction (security: critical).
  const now = Date.now();
  const logs = events.filter((e) => e.event.startsWith('auth.') || e.event.startsWith('security.')).map((e) => {
    const security = e.event.startsWith('security.');
    return { tenantId: e.tenantId, logType: security ? 'security' : 'auth', plane: 'data', lane: security ? 'critical' : 'default', ts: now, body: { event: e.event, data: e.data } };
  });
  // Both statements are sent together (postgres.js pipelines concurrent statements on the transaction's
  // connection): one round trip instead of two on every sign-in (issue 35 item 3). Either failing aborts
  // the transaction, so the caller's commit fails as before.
  await Promise.all([outbox, insertLogRecords(tx, logs, false)]);
}

/** One event whose outbox id the caller keeps (a log quota notification's notification_event_id). */
export async function recordEventReturningId(tx: TxSql, e: DomainEvent): Promise<string> {
  if (!isEventName(e.event)) throw new TypeError(`unknown event name "${String(e.event)}"`);
  const [r] = await tx<Array<{ id: string }>>`insert into event_outbox (tenant_id, event, data, trace_context) values (${e.tenantId}, ${e.event}, ${tx.json(sealFields(e.tenantId, e.data) as never)}, ${tracingOn ? traceparentFor(tx) : null}) returning id::text`;
  return r!.id;
}

/**
 * The trace an event goes to its deliveries with: the sampled request's, which the transaction of its
 * traced client view names (the HTTP process carries it explicitly), or the active one (workers).
 */
function traceparentFor(tx: TxSql): string | null {
  const ctx = traceOf(tx);
  return ctx === undefined ? currentTraceparent() : traceparentOf(ctx);
}

/** Wakes the relay at commit (used after a manual retry makes a delivery due). */
export async function notifyRelay(db: Sql | TxSql): Promise<void> {
  await db`select pg_notify(${OUTBOX_CHANNEL}, '')`;
}
