import type { AdminWebhook, AdminWebhookCreated, AdminWebhookDelivery, AdminWebhookListItem } from '../generated/types.js';
import type { AttemptRow, DeliveryRow, WebhookRow } from '../store/webhooks.js';
import { openFields } from '../sealed-fields.js';

/** Epoch ms (storage) to epoch seconds (webhook interface). */
const s = (ms: number | null | undefined): number | null => (ms === null || ms === undefined ? null : Math.floor(Number(ms) / 1000));
const sec = (ms: number): number => Math.floor(Number(ms) / 1000);

/** Percentage of successful attempts, two decimals; 100 before the first attempt. */
export function successRate(w: Pick<WebhookRow, 'total_deliveries' | 'failed_deliveries'>): number {
  const total = Number(w.total_deliveries);
  return total === 0 ? 100 : Math.round(((total - Number(w.failed_deliveries)) / total) * 10_000) / 100;
}

/** The full webhook object; never the secret. */
export function webhookView(w: WebhookRow): AdminWebhook {
  return {
    id: w.id, name: w.name, description: w.description, url: w.url, events: w.events, status: w.status,
    headers: w.headers, timeout: w.timeout_s, retry_policy: { max_retries: w.max_retries, retry_interval: w.retry_interval_s },
    filters: w.filters, success_rate: successRate(w), total_deliveries: Number(w.total_deliveries), failed_deliveries: Number(w.failed_deliveries),
    total_attempts: Number(w.total_attempts), failed_attempts: Number(w.failed_attempts),
    last_triggered_at: s(w.last_triggered_at), last_success_at: s(w.last_success_at), last_failure_at: s(w.last_failure_at),
    created_at: sec(w.created_at), updated_at: sec(w.updated_at),
  };
}

/** The spec's list-item form. */
export function webhookListItem(w: WebhookRow): AdminWebhookListItem {
  return { id: w.id, name: w.name, url: w.url, events: w.events, status: w.status, success_rate: successRate(w), last_triggered_at: s(w.last_triggered_at), created_at: sec(w.created_at) };
}

/** The spec's create-response form, plus the secret when the server generated it (shown this once). */
export function webhookCreated(w: WebhookRow, generatedSecret: string | undefined): AdminWebhookCreated {
  const out: AdminWebhookCreated = { id: w.id, name: w.name, url: w.url, events: w.events, status: w.status, created_at: sec(w.created_at) };
  if (generatedSecret !== undefined) out.secret = generatedSecret;
  return out;
}

export function deliveryView(d: DeliveryRow, attempts?: AttemptRow[]): AdminWebhookDelivery {
  const out: AdminWebhookDelivery = {
    id: d.id, event: d.event, status: d.status, attempt: d.attempt, response_status: d.response_status,
    response_time_ms: d.response_time_ms, error: d.error,
    request_body: { event: d.request_body.event, timestamp: d.request_body.timestamp, data: openFields(d.tenant_id, d.request_body.data) },
    triggered_at: sec(d.triggered_at), completed_at: s(d.completed_at), next_attempt_at: d.status === 'pending' ? s(d.next_attempt_at) : null,
  };
  if (attempts) {
    out.attempts = attempts.map((a) => ({
      attempt: a.attempt, status: a.status, response_status: a.response_status, response_time_ms: a.response_time_ms,
      error: a.error, triggered_at: sec(a.started_at), completed_at: sec(a.completed_at),
    }));
  }
  return out;
}
