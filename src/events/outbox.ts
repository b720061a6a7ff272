import type { Sql, TxSql } from '../store/sql.js';
import { isEventName, type EventName } from './names.js';

/** Channel the relay LISTENs on; a NOTIFY inside the writer's transaction is delivered at commit. */
export const OUTBOX_CHANNEL = 'svc_outbox';

export interface DomainEvent {
  tenantId: string;
  event: EventName;
  /** Event payload; user events carry `user_id`, role events `user_id` and `role`/`roles`. */
  data: Record<string, unknown>;
}

/**
 * Writes an event to the outbox inside the caller's transaction, so the event exists if and only if
 * the change that caused it committed. The relay delivers it to the tenant's matching webhooks.
 */
export async function recordEvent(tx: TxSql, e: DomainEvent): Promise<void> {
  if (!isEventName(e.event)) throw new TypeError(`unknown event name "${String(e.event)}"`);
  if (typeof e.tenantId !== 'string' || e.tenantId === '') throw new TypeError('recordEvent needs a tenantId');
  if (e.data === null || typeof e.data !== 'object' || Array.isArray(e.data)) throw new TypeError('event data must be an object');
  await tx`insert into event_outbox (tenant_id, event, data) values (${e.tenantId}, ${e.event}, ${tx.json(e.data as never)})`;
  await tx`select pg_notify(${OUTBOX_CHANNEL}, '')`;
}

/** Wakes the relay at commit (used after a manual retry makes a delivery due). */
export async function notifyRelay(db: Sql | TxSql): Promise<void> {
  await db`select pg_notify(${OUTBOX_CHANNEL}, '')`;
}
