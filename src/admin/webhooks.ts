import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError, type Details } from '../errors.js';
import { notifyRelay } from '../events/outbox.js';
import type { Route } from '../http/types.js';
import { decodeCursor, page } from '../store/cursor.js';
import { newId } from '../store/ids.js';
import type { TenantStore } from '../store/index.js';
import type { DeliveryRow } from '../store/webhooks.js';
import { filterProblems } from '../webhooks/filters.js';
import { RESERVED_HEADER } from '../webhooks/message.js';
import { generateSecret, sealWebhookSecret, webhookSecret } from '../webhooks/secret-box.js';
import { sendTest } from '../webhooks/test-send.js';
import { obviouslyPrivate } from '../webhooks/url-safety.js';
import { deliveryView, webhookCreated, webhookListItem, webhookView } from '../webhooks/view.js';
import { adminRoute, found } from './route.js';

const READ = 'admin:webhooks:read';
const WRITE = 'admin:webhooks:write';
const tags = ['webhooks'];
// Audit entries carry the webhook views, which never hold the secret nor its ciphertext.
const audit = (verb: string) => ({ action: `webhook.${verb}`, resourceType: 'webhook' });

const webhookNotFound = () => new NotFound('not_found', 'No such webhook.');
const deliveryNotFound = () => new NotFound('not_found', 'No such delivery.');

/** Checks the schema cannot express: reserved header names, private URLs, filters for unsubscribed events. */
function checkSemantics(deps: Deps, v: { url?: string | undefined; headers?: object | undefined; filters?: object | undefined }, events: string[]): void {
  const details: Details = {};
  if (v.url !== undefined && !deps.config.webhookAllowPrivate && obviouslyPrivate(v.url)) details.url = ['must not point to a private, loopback or link-local address'];
  for (const h of Object.keys(v.headers ?? {})) if (RESERVED_HEADER.test(h)) (details[`headers.${h}`] ??= []).push('is a reserved header');
  for (const e of Object.keys(v.filters ?? {})) if (!events.includes(e)) (details[`filters.${e}`] ??= []).push('is not one of the webhook events');
  for (const [k, msg] of Object.entries(filterProblems(v.filters as Record<string, unknown> | undefined))) (details[k] ??= []).push(msg);
  if (Object.keys(details).length) throw new ValidationError(details);
}

async function mustGet(store: TenantStore, id: string, lock = false) {
  const w = found(await store.webhooks.get(id, { lock }), webhookNotFound);
  return w;
}

/** Deliveries are ordered by trigger time: the one cursor codec over (triggered_at, id). */
function deliveryPage(rows: DeliveryRow[], limit: number): { items: DeliveryRow[]; next: string | null } {
  const p = page(rows.map((d) => ({ created_at: d.triggered_at, id: d.id, d })), limit);
  return { items: p.items.map((x) => x.d), next: p.next };
}

/** Webhooks of the administration interface (spec, Endpoints: Webhooks). Every mutation is audited in its own transaction. */
export function webhookRoutes(deps: Deps): Route[] {
  const kek = deps.config.keyEncryptionKey;
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/webhooks', permission: READ, tags, query: 'query.webhook-list',
      summary: 'List webhooks', response: { 200: 'admin.webhook-list' },
      handler: async ({ query, store }) => {
        const p = page(await store.webhooks.list({ ...query, cursor: decodeCursor(query.cursor) }), query.limit);
        return { body: { items: p.items.map(webhookListItem), total: await store.webhooks.count(query), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/webhooks', permission: WRITE, tags, body: 'admin.webhook-create',
      summary: 'Create a webhook (a generated secret is shown once, in this response)', response: { 201: 'admin.webhook-created' },
      audit: audit('create'),
      handler: async ({ ctx, body: { secret, ...fields }, mutate }) => {
        checkSemantics(deps, fields, fields.events);
        const plain = secret ?? generateSecret();
        const id = newId('wh');
        const row = await mutate(async (_tx, store) => {
          const w = await store.webhooks.insert(id, fields, sealWebhookSecret(kek, ctx.tenantId, id, plain));
          return { result: w, resourceId: w.id, after: webhookView(w) };
        });
        return { status: 201, body: webhookCreated(row, secret === undefined ? plain : undefined) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/webhooks/:id', permission: READ, tags,
      summary: 'Get a webhook', response: { 200: 'admin.webhook' }, errors: [404],
      handler: async ({ params, store }) => ({ body: webhookView(await mustGet(store, params.id!)) }),
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/webhooks/:id', permission: WRITE, tags, body: 'admin.webhook-update',
      summary: 'Update a webhook: the fields given replace the stored ones; `status` activates or deactivates', response: { 200: 'admin.webhook' }, errors: [404],
      audit: audit('update'),
      handler: async ({ ctx, body: { secret, ...patch }, params, mutate }) => {
        const row = await mutate(async (_tx, store) => {
          const cur = await mustGet(store, params.id!, true);
          checkSemantics(deps, { ...patch, filters: patch.filters ?? (patch.events ? cur.filters : undefined) }, patch.events ?? cur.events);
          const secretEnc = secret === undefined ? undefined : sealWebhookSecret(kek, ctx.tenantId, cur.id, secret);
          const next = found(await store.webhooks.update(cur.id, { ...patch, secretEnc }), webhookNotFound);
          // The secret never enters the audit entry; that it changed is all the entry says of it.
          return { result: next, before: webhookView(cur), after: webhookView(next), metadata: { secret_changed: secret !== undefined } };
        });
        return { body: webhookView(row) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/webhooks/:id', permission: WRITE, tags,
      summary: 'Delete a webhook and its delivery history', response: { 204: null }, errors: [404],
      audit: { ...audit('delete'), severity: 'warn' },
      handler: async ({ params, mutate }) => {
        await mutate(async (_tx, store) => {
          const cur = await mustGet(store, params.id!, true);
          if (!(await store.webhooks.delete(cur.id))) throw webhookNotFound();
          return { result: null, before: webhookView(cur) };
        });
        return { status: 204 };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/webhooks/:id/test', permission: WRITE, tags, body: 'admin.webhook-test-request',
      summary: 'Send a test event now and report the receiver\'s answer (honours Idempotency-Key for 24 h)', response: { 200: 'admin.webhook-test-result' }, errors: [404, 409],
      audit: audit('test'),
      handler: async ({ deps, req, body, params, store, mutate, unchanged }) => {
        const w = await mustGet(store, params.id!);
        const key = req.headers['idempotency-key'];
        if (key !== undefined && (key.length === 0 || key.length > 255)) throw new ValidationError({ 'Idempotency-Key': ['must be 1 to 255 characters'] });
        if (key !== undefined) {
          const claim = await store.webhooks.claimTestKey(w.id, key, Date.now(), requestHash(body));
          if (!claim.claimed) {
            // The IETF idempotency-key draft: a key reused with a different payload is a client error, not a replay.
            if (claim.mismatch) throw new ValidationError({ 'Idempotency-Key': ['was already used with a different request body'] }, 'The Idempotency-Key was already used with a different request body.');
            if (claim.result === null) throw new Conflict('conflict', 'A request with this Idempotency-Key is still in progress.');
            unchanged();
            return { body: claim.result, headers: { 'Idempotent-Replayed': 'true' } };
          }
        }
        try {
          // No transaction is open while the receiver answers (up to the webhook's timeout); the audit
          // entry, the delivery in the webhook's log and the stored result for the key are written together afterwards.
          const { result, delivery } = await sendTest(w, webhookSecret(w, kek), body.event, deps.config.webhookAllowPrivate);
          await mutate(async (_tx, s) => {
            // Locked so a concurrent delete answers 404 here rather than a foreign-key error.
            await mustGet(s, w.id, true);
            await s.webhooks.recordTestDelivery(delivery);
            if (key !== undefined) await s.webhooks.storeTestResult(w.id, key, result);
            const metadata = { delivery_id: delivery.id, event: body.event ?? null, success: result.success, status_code: result.status_code ?? null, error: result.error ?? null, duration_ms: result.duration_ms };
            return { result: null, metadata };
          });
          return { body: result };
        } catch (err) {
          if (key !== undefined) await store.webhooks.releaseTestKey(w.id, key).catch(() => {});
          throw err;
        }
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/webhooks/:id/deliveries', permission: READ, tags, query: 'query.webhook-deliveries',
      summary: 'List deliveries of a webhook, newest first', response: { 200: 'admin.webhook-delivery-list' }, errors: [404],
      handler: async ({ query, params, store }) => {
        const w = await mustGet(store, params.id!);
        const p = deliveryPage(await store.webhooks.deliveries(w.id, { ...query, cursor: decodeCursor(query.cursor) }), query.limit);
        return { body: { items: p.items.map((d) => deliveryView(d)), total: await store.webhooks.countDeliveries(w.id, query), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/webhooks/:id/deliveries/:deliveryId', permission: READ, tags,
      summary: 'Get one delivery with every attempt', response: { 200: 'admin.webhook-delivery' }, errors: [404],
      handler: async ({ params, store }) => {
        const r = found(await store.webhooks.delivery(params.id!, params.deliveryId!), deliveryNotFound);
        return { body: deliveryView(r.delivery, r.attempts) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/webhooks/:id/deliveries/:deliveryId/retry', permission: WRITE, tags,
      summary: 'Retry a failed delivery once more (it becomes pending)', response: { 202: 'admin.webhook-retry-result' }, errors: [404, 409],
      // Recorded against the webhook, so its audit trail reads in one place; the delivery is in the metadata.
      audit: { action: 'webhook_delivery.retry', resourceType: 'webhook' },
      handler: async ({ params, mutate }) => {
        const deliveryId = params.deliveryId!;
        const r = await mutate(async (tx, store) => {
          const out = await store.webhooks.retryDelivery(params.id!, deliveryId, Date.now());
          if (out === 'not_found') throw deliveryNotFound();
          if (out === 'not_failed') throw new Conflict('conflict', 'Only a failed delivery can be retried.');
          await notifyRelay(tx);
          const result = { id: out.id, status: 'pending' as const, retry_at: Math.floor(Number(out.next_attempt_at) / 1000) };
          return {
            result, metadata: { delivery_id: out.id },
            before: { delivery_id: out.id, status: 'failed', attempt: out.attempt - 1 },
            after: { delivery_id: out.id, status: 'pending', attempt: out.attempt, retry_at: result.retry_at },
          };
        });
        return { status: 202, body: r };
      },
    }),
  ];
}

/** A stable fingerprint of a validated test request, to tell a replay from a reuse of the key. */
function requestHash(body: unknown): string {
  return createHash('sha256').update(JSON.stringify(body ?? {})).digest('base64url');
}
