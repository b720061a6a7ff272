import { countWebhookDelivery } from '../metrics.js';
import type { RequestBody, TestDelivery } from '../store/webhooks.js';
import { deliveryHeaders, newDeliveryId } from './message.js';
import { postWebhook } from './sender.js';

/** Event name of a test without a named event type; receivers can recognise and ignore it. */
export const TEST_EVENT = 'webhook.test';

/** Illustrative data per event group, marked `test: true` so receivers never act on it. */
function sampleData(event: string, webhookId: string): Record<string, unknown> {
  const base = { test: true, webhook_id: webhookId };
  if (event.startsWith('user.') || event.startsWith('auth.')) return { ...base, user_id: 'usr_test' };
  if (event === 'role.assigned' || event === 'role.unassigned') return { ...base, user_id: 'usr_test', role: 'test-role' };
  if (event.startsWith('policy.')) return { ...base, policy_id: 'pol_test' };
  if (event.startsWith('security.')) return { ...base, user_id: 'usr_test', reason: 'test' };
  return base;
}

export interface TestResult {
  success: boolean; webhook_id: string; url: string; status_code?: number; response_body: string | null; error?: string;
  duration_ms: number; timestamp: string; headers_sent: string[];
}

/**
 * Sends one signed test delivery synchronously: the receiver's answer (spec "webhook test result",
 * shape A) and the delivery to record in the webhook's log, under the id the receiver saw in X-Svc-Delivery.
 */
export async function sendTest(w: { id: string; url: string; headers: Record<string, string>; timeout_s: number }, secret: string, event: string | undefined, allowPrivate: boolean): Promise<{ result: TestResult; delivery: TestDelivery }> {
  const name = event ?? TEST_EVENT;
  const timestamp = new Date().toISOString();
  const requestBody: RequestBody = { event: name, timestamp, data: sampleData(name, w.id) };
  const body = JSON.stringify(requestBody);
  const id = newDeliveryId();
  const headers = deliveryHeaders({ secret, event: name, deliveryId: id, body, custom: w.headers });
  const startedAt = Date.now();
  const r = await postWebhook(w.url, headers, body, w.timeout_s * 1000, allowPrivate);
  const completedAt = Date.now();
  // Counted as every attempt the worker makes (svc_webhook_deliveries_total), answered or not.
  countWebhookDelivery(r.ok, r.status);
  const out: TestResult = { success: r.ok, webhook_id: w.id, url: w.url, response_body: r.body, duration_ms: r.durationMs, timestamp, headers_sent: Object.keys(headers) };
  if (r.status !== null && r.status >= 100 && r.status <= 599) out.status_code = r.status;
  if (r.error) out.error = r.error;
  const delivery: TestDelivery = {
    id, webhookId: w.id, event: name, requestBody, ok: r.ok, responseStatus: out.status_code ?? null, responseTimeMs: r.durationMs,
    error: r.error, startedAt, completedAt,
  };
  return { result: out, delivery };
}
