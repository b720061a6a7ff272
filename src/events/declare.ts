import type { TxSql } from '../sql.js';
import type { EventName } from './names.js';
import { recordEventReturningId, recordEvents, type DomainEvent } from './outbox.js';

/** One event of a change, before it is written: its name and payload (the tenant comes from the writer). */
export interface PendingEvent<E extends EventName = EventName> { event: E; data: Record<string, unknown> }

/**
 * The events a domain service may write, declared once where the service is defined (admin routes
 * declare theirs in `adminRoute({ events })`). The only way to write an event to the outbox from outside
 * src/events: an event not in the declaration does not type-check and is refused at run time;
 * test/events/declared-events.test.ts holds every declaration against the spec's event list and
 * against what the code emits.
 */
export interface DeclaredEvents<E extends EventName> {
  readonly names: ReadonlySet<E>;
  /** Writes one event to the outbox inside the caller's transaction (it exists iff the change commits). */
  emit(tx: TxSql, tenantId: string, event: E, data: Record<string, unknown>): Promise<void>;
  /** Several events of one change in one statement, in order. */
  emitAll(tx: TxSql, tenantId: string, events: ReadonlyArray<PendingEvent<E>>): Promise<void>;
  /** One event whose outbox id the caller keeps (a log quota notification's notification_event_id). */
  emitReturningId(tx: TxSql, tenantId: string, event: E, data: Record<string, unknown>): Promise<string>;
}

/** Refuses an event outside `names` (a programmer mistake, not a client error). */
export function assertDeclared<E extends EventName>(names: ReadonlySet<E>, event: string, owner: string): asserts event is E {
  if (!names.has(event as E)) throw new TypeError(`${owner} emits "${event}" but does not declare it`);
}

/** Declares the events of one service; see DeclaredEvents. */
export function declareEvents<const E extends EventName>(events: readonly E[]): DeclaredEvents<E> {
  const names: ReadonlySet<E> = new Set(events);
  const owner = `a service declaring [${events.join(', ')}]`;
  const toDomain = (tenantId: string, e: PendingEvent<E>): DomainEvent => {
    assertDeclared(names, e.event, owner);
    return { tenantId, event: e.event, data: e.data };
  };
  return {
    names,
    emit: async (tx, tenantId, event, data) => recordEvents(tx, [toDomain(tenantId, { event, data })]),
    emitAll: async (tx, tenantId, list) => recordEvents(tx, list.map((e) => toDomain(tenantId, e))),
    emitReturningId: async (tx, tenantId, event, data) => recordEventReturningId(tx, toDomain(tenantId, { event, data })),
  };
}
