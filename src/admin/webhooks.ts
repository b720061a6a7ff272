import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError, type Details } from '../errors.js';
import { notifyRelay } from '../events/outbox.js';
import type { HttpRequest } from '../http/request.js';
import type { Route } from '../http/types.js';
import { RESERVED_HEADER } from '../webhooks/message.js';
import {
  claimTestKey, decodeCursor, deleteWebhook, getDelivery, getWebhook, insertWebhook, listDeliveries, listWebhooks,
  newWebhookId, releaseTestKey, retryDelivery, storeTestResult, updateWebhook, webhookSecret, type WebhookInput, type WebhookPatch,
} from '../webhooks/repository.js';
import { generateSecret } from '../webhooks/secret-box.js';
import { sendTest } from '../webhooks/test-send.js';
import { obviouslyPrivate } from '../webhooks/url-safety.js';
import { deliveryView, webhookCreated, webhookListItem, webhookView } from '../webhooks/view.js';
import { adminContext } from './context.js';

const READ = 'admin:webhooks:read';
const WRITE = 'admin:webhooks:write';
const tags = ['webhooks'];

/** Checks the schema cannot express: reserved header names, private URLs, filters for unsubscribed events. */
function checkSemantics(deps: Deps, v: { url?: string | undefined; headers?: Record<string, string> | undefined; filters?: Record<string, unknown> | undefined }, events: string[]): void {
  const details: Details = {};
  if (v.url !== undefined && !deps.config.webhookAllowPrivate && obviouslyPrivate(v.url)) details.url = ['must not point to a private, loopback or link-local address'];
  for (const h of Object.keys(v.headers ?? {})) if (RESERVED_HEADER.test(h)) (details[`headers.${h}`] ??= []).push('is a reserved header');
  for (const e of Object.keys(v.filters ?? {})) if (!events.includes(e)) (details[`filters.${e}`] ??= []).push('is not one of the webhook events');
  if (Object.keys(details).length) throw new ValidationError(details);
}

async function mustGet(deps: Deps, tenantId: string, id: string) {
  const w = await getWebhook(deps.sql, tenantId, id);
  if (!w) throw new NotFound('not_found', 'No such webhook.');
  return w;
}

function badCursor(): never {
  throw new ValidationError({ cursor: ['is not a valid cursor'] });
}

/** Webhooks of the administration interface (spec, Endpoints: Webhooks). Every mutation runs in one transaction. */
export function webhookRoutes(deps: Deps): Route[] {
  const kek = deps.config.keyEncryptionKey;
  return [
    {
      method: 'GET', path: '/api/admin/webhooks', iface: 'admin', querySchema: 'query.webhook-list',
      doc: { summary: 'List webhooks', tags, permission: READ, responses: { 200: 'admin.webhook-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as { limit: number; cursor?: string; status?: string };
        const cursor = q.cursor ? decodeCursor(q.cursor) ?? badCursor() : undefined;
        const r = await listWebhooks(deps.sql, ctx.tenantId, { limit: q.limit, cursor, status: q.status });
        return { body: { items: r.rows.map(webhookListItem), total: r.total, cursor: r.next } };
      },
    },
    {
      method: 'POST', path: '/api/admin/webhooks', iface: 'admin', body: 'json', bodySchema: 'admin.webhook-create',
      doc: { summary: 'Create a webhook (a generated secret is shown once, in this response)', tags, permission: WRITE, responses: { 201: 'admin.webhook-created' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const input = req.data as Omit<WebhookInput, 'secret'> & { secret?: string };
        checkSemantics(deps, input, input.events);
        const generated = input.secret === undefined ? generateSecret() : undefined;
        const row = await deps.sql.begin((tx) => insertWebhook(tx, ctx.tenantId, newWebhookId(), { ...input, secret: input.secret ?? generated! }, kek, Date.now()));
        return { status: 201, body: webhookCreated(row, generated) };
      },
    },
    {
      method: 'GET', path: '/api/admin/webhooks/:id', iface: 'admin',
      doc: { summary: 'Get a webhook', tags, permission: READ, responses: { 200: 'admin.webhook' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        return { body: webhookView(await mustGet(deps, ctx.tenantId, req.params.id!)) };
      },
    },
    {
      method: 'PUT', path: '/api/admin/webhooks/:id', iface: 'admin', body: 'json', bodySchema: 'admin.webhook-update',
      doc: { summary: 'Update a webhook: the fields given replace the stored ones; `status` activates or deactivates', tags, permission: WRITE, responses: { 200: 'admin.webhook' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const patch = req.data as WebhookPatch;
        const row = await deps.sql.begin(async (tx) => {
          const cur = await getWebhook(tx, ctx.tenantId, req.params.id!);
          if (!cur) throw new NotFound('not_found', 'No such webhook.');
          const events = patch.events ?? cur.events;
          checkSemantics(deps, { ...patch, filters: patch.filters ?? (patch.events ? cur.filters : undefined) }, events);
          return updateWebhook(tx, ctx.tenantId, cur.id, patch, kek, Date.now());
        });
        if (!row) throw new NotFound('not_found', 'No such webhook.');
        return { body: webhookView(row) };
      },
    },
    {
      method: 'DELETE', path: '/api/admin/webhooks/:id', iface: 'admin',
      doc: { summary: 'Delete a webhook and its delivery history', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const gone = await deps.sql.begin((tx) => deleteWebhook(tx, ctx.tenantId, req.params.id!));
        if (!gone) throw new NotFound('not_found', 'No such webhook.');
        return { status: 204 };
      },
    },
    {
      method: 'POST', path: '/api/admin/webhooks/:id/test', iface: 'admin', body: 'json', bodySchema: 'admin.webhook-test-request',
      doc: { summary: 'Send a test event now and report the receiver\'s answer (honours Idempotency-Key for 24 h)', tags, permission: WRITE, responses: { 200: 'admin.webhook-test-result' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: (req) => testWebhook(deps, req),
    },
    {
      method: 'GET', path: '/api/admin/webhooks/:id/deliveries', iface: 'admin', querySchema: 'query.webhook-deliveries',
      doc: { summary: 'List deliveries of a webhook, newest first', tags, permission: READ, responses: { 200: 'admin.webhook-delivery-list' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const w = await mustGet(deps, ctx.tenantId, req.params.id!);
        const q = req.queryData as { limit: number; cursor?: string; status?: string; event?: string };
        const cursor = q.cursor ? decodeCursor(q.cursor) ?? badCursor() : undefined;
        const r = await listDeliveries(deps.sql, ctx.tenantId, w.id, { limit: q.limit, cursor, status: q.status, event: q.event });
        return { body: { items: r.rows.map((d) => deliveryView(d)), total: r.total, cursor: r.next } };
      },
    },
    {
      method: 'GET', path: '/api/admin/webhooks/:id/deliveries/:deliveryId', iface: 'admin',
      doc: { summary: 'Get one delivery with every attempt', tags, permission: READ, responses: { 200: 'admin.webhook-delivery' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const r = await getDelivery(deps.sql, ctx.tenantId, req.params.id!, req.params.deliveryId!);
        if (!r) throw new NotFound('not_found', 'No such delivery.');
        return { body: deliveryView(r.delivery, r.attempts) };
      },
    },
    {
      method: 'POST', path: '/api/admin/webhooks/:id/deliveries/:deliveryId/retry', iface: 'admin',
      doc: { summary: 'Retry a failed delivery once more (it becomes pending)', tags, permission: WRITE, responses: { 202: 'admin.webhook-retry-result' }, errors: [401, 403, 404, 409], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const r = await deps.sql.begin(async (tx) => {
          const out = await retryDelivery(tx, ctx.tenantId, req.params.id!, req.params.deliveryId!, Date.now());
          if (typeof out !== 'string') await notifyRelay(tx);
          return out;
        });
        if (r === 'not_found') throw new NotFound('not_found', 'No such delivery.');
        if (r === 'not_failed') throw new Conflict('conflict', 'Only a failed delivery can be retried.');
        return { status: 202, body: { id: r.id, status: 'pending', retry_at: Math.floor(Number(r.next_attempt_at) / 1000) } };
      },
    },
  ];
}

async function testWebhook(deps: Deps, req: HttpRequest) {
  const ctx = await adminContext(deps, req, WRITE);
  const w = await mustGet(deps, ctx.tenantId, req.params.id!);
  const event = (req.data as { event?: string }).event;
  const key = req.headers['idempotency-key'];
  if (key !== undefined && (key.length === 0 || key.length > 255)) throw new ValidationError({ 'Idempotency-Key': ['must be 1 to 255 characters'] });
  if (key !== undefined) {
    const claim = await claimTestKey(deps.sql, ctx.tenantId, w.id, key, Date.now());
    if (!claim.claimed) {
      if (claim.result === null) throw new Conflict('conflict', 'A request with this Idempotency-Key is still in progress.');
      return { body: claim.result, headers: { 'Idempotent-Replayed': 'true' } };
    }
  }
  try {
    const result = await sendTest(w, webhookSecret(w, deps.config.keyEncryptionKey), event, deps.config.webhookAllowPrivate);
    if (key !== undefined) await storeTestResult(deps.sql, ctx.tenantId, w.id, key, result);
    return { body: result };
  } catch (err) {
    if (key !== undefined) await releaseTestKey(deps.sql, ctx.tenantId, w.id, key).catch(() => {});
    throw err;
  }
}
