import type { FanOutHook, NewDelivery, OutboxEvent } from '../cross-tenant/webhook-deliveries.js';
import { filtersMatch } from './filters.js';
import { newDeliveryId, type RequestBody } from './message.js';
import { openFields } from '../sealed-fields.js';

/**
 * Which deliveries a batch of outbox events makes: one per event and active webhook of the event's
 * tenant that subscribes to the event and whose filters match its data (spec, Events rule 4).
 */
export function planDeliveries(events: OutboxEvent[], hooks: FanOutHook[]): NewDelivery[] {
  const out: NewDelivery[] = [];
  for (const e of events) {
    for (const h of hooks) {
      if (h.tenant_id !== e.tenant_id || !h.events.includes(e.event) || !filtersMatch(h.filters, e.event, openFields(e.tenant_id, e.data))) continue;
      const body: RequestBody = { event: e.event, timestamp: new Date(Number(e.occurred_at)).toISOString(), data: e.data };
      out.push({ tenant_id: e.tenant_id, id: newDeliveryId(), webhook_id: h.id, outbox_id: e.id, event: e.event, max_attempt: 1 + h.max_retries, request_body: body, trace_context: e.trace_context });
    }
  }
  return out;
}
