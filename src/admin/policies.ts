import type { Deps } from '../deps.js';
import { NotFound, ValidationError } from '../errors.js';
import { recordEvent } from '../events/outbox.js';
import type { Route } from '../http/types.js';
import type { TxSql } from '../store/sql.js';
import { adminContext, type AdminContext } from './context.js';
import { audited } from './mutate.js';
import { decodeCursor, newId, page } from './pagination.js';
import { deletePolicy, getPolicy, insertPolicy, listPolicies, replacePolicy, type PolicyInput, type PolicyRow } from './repo/policies.js';

const READ = 'admin:policies:read';
const WRITE = 'admin:policies:write';
const tags = ['admin-policies'];
const BASE = '/api/admin/admin-policies';
const KNOWN = ['name', 'description', 'priority', 'effect', 'conditions', 'resource_types', 'actions', 'enabled'] as const;
// Server-owned fields: ignored when sent, never stored among the extra properties.
const SERVER = new Set(['id', 'tenant_id', 'created_by', 'updated_by', 'created_at', 'updated_at']);

/** The spec's policy object, with any extra properties the client stored echoed back. */
export function policyView(p: PolicyRow): Record<string, unknown> {
  return {
    ...p.extra, id: p.id, tenant_id: p.tenant_id, name: p.name, description: p.description, priority: p.priority, effect: p.effect,
    conditions: p.conditions, resource_types: p.resource_types, actions: p.actions, enabled: p.enabled, created_by: p.created_by,
    updated_by: p.updated_by, created_at: Number(p.created_at), updated_at: Number(p.updated_at),
  };
}

const notFound = () => new NotFound('policy_not_found', 'No such admin policy.');

function split(body: Record<string, unknown>): { known: Partial<PolicyInput>; extra: Record<string, unknown> } {
  const known: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if ((KNOWN as readonly string[]).includes(k)) known[k] = v;
    else if (!SERVER.has(k)) extra[k] = v;
  }
  return { known: known as Partial<PolicyInput>, extra };
}

/** Checks the schema cannot express: time zones and CIDR prefixes. */
function checkConditions(conditions: PolicyInput['conditions']): void {
  const details: Record<string, string[]> = {};
  conditions.forEach((c, i) => {
    if (c.type === 'time_window' && typeof c.params.timezone === 'string') {
      try { new Intl.DateTimeFormat('en-US', { timeZone: c.params.timezone }); } catch { details[`conditions.${i}.params.timezone`] = ['is not a known IANA time zone']; }
    }
    if (c.type === 'ip_range') {
      for (const cidr of c.params.cidrs as string[]) {
        const [, bits] = cidr.split('/');
        const max = cidr.includes(':') ? 128 : 32;
        if (bits !== undefined && !(Number(bits) >= 0 && Number(bits) <= max)) (details[`conditions.${i}.params.cidrs`] ??= []).push(`${cidr} has an invalid prefix length`);
      }
    }
  });
  if (Object.keys(details).length) throw new ValidationError(details);
}

/**
 * Admin policies of the current tenant (spec: Admin policy). Enabled policies are applied to every admin
 * request after permissions (policy-engine.ts). Create emits policy.created; every change policy.updated.
 */
export function policyRoutes(deps: Deps): Route[] {
  const emit = (tx: TxSql, ctx: AdminContext, event: 'policy.created' | 'policy.updated', p: PolicyRow) =>
    recordEvent(tx, { tenantId: ctx.tenantId, event, data: { policy_id: p.id, name: p.name, effect: p.effect, enabled: p.enabled, priority: p.priority } });
  const setEnabled = (verb: 'activate' | 'deactivate'): Route => ({
    method: 'POST', path: `${BASE}/:id/${verb}`, iface: 'admin', body: 'none',
    doc: { summary: verb === 'activate' ? 'Activate a policy (enabled true); it applies from the next request (policy.updated)' : 'Deactivate a policy (enabled false) (policy.updated)', tags, permission: WRITE, responses: { 200: 'admin.policy' }, errors: [401, 403, 404], security: 'bearer' },
    handler: async (req) => {
      const ctx = await adminContext(deps, req, WRITE);
      const id = req.params.id!;
      const p = await audited(deps, ctx, req, { action: `admin_policy.${verb}`, resourceType: 'admin_policy', resourceId: id, severity: 'warn' }, async (tx) => {
        const cur = await getPolicy(tx, ctx.tenantId, id, true);
        if (!cur) throw notFound();
        const enabled = verb === 'activate';
        if (cur.enabled === enabled) return { result: cur, before: policyView(cur), after: policyView(cur), metadata: { changed: false } };
        const next = await replacePolicy(tx, ctx.tenantId, id, { ...cur, enabled }, ctx.actor.id);
        await emit(tx, ctx, 'policy.updated', next);
        return { result: next, before: policyView(cur), after: policyView(next) };
      });
      return { body: policyView(p) };
    },
  });
  return [
    {
      method: 'GET', path: BASE, iface: 'admin', querySchema: 'query.admin-policy-list',
      doc: { summary: 'List admin policies, newest first', tags, permission: READ, responses: { 200: 'admin.policy-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as { limit: number; cursor?: string; enabled?: boolean; effect?: string };
        const p = page(await listPolicies(deps.sql, ctx.tenantId, { ...q, cursor: decodeCursor(q.cursor) }), q.limit);
        return { body: { items: p.items.map(policyView), cursor: p.next } };
      },
    },
    {
      method: 'POST', path: BASE, iface: 'admin', body: 'json', bodySchema: 'admin.policy-create',
      doc: { summary: 'Create an admin policy (disabled unless enabled is true; extra properties are stored and echoed) (policy.created)', tags, permission: WRITE, responses: { 201: 'admin.policy' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const { known, extra } = split(req.data as Record<string, unknown>);
        const input = { description: null, enabled: false, ...known, extra } as PolicyInput;
        checkConditions(input.conditions);
        const p = await audited(deps, ctx, req, { action: 'admin_policy.create', resourceType: 'admin_policy', severity: 'warn' }, async (tx) => {
          const row = await insertPolicy(tx, ctx.tenantId, newId('pol'), input, ctx.actor.id);
          await emit(tx, ctx, 'policy.created', row);
          return { result: row, resourceId: row.id, after: policyView(row) };
        });
        return { status: 201, body: policyView(p) };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, iface: 'admin',
      doc: { summary: 'Get an admin policy', tags, permission: READ, responses: { 200: 'admin.policy' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const p = await getPolicy(deps.sql, ctx.tenantId, req.params.id!);
        if (!p) throw notFound();
        return { body: policyView(p) };
      },
    },
    {
      method: 'PUT', path: `${BASE}/:id`, iface: 'admin', body: 'json', bodySchema: 'admin.policy-update',
      doc: { summary: 'Update an admin policy: the fields given replace the stored ones (policy.updated)', tags, permission: WRITE, responses: { 200: 'admin.policy' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const { known, extra } = split(req.data as Record<string, unknown>);
        if (known.conditions) checkConditions(known.conditions);
        const id = req.params.id!;
        const p = await audited(deps, ctx, req, { action: 'admin_policy.update', resourceType: 'admin_policy', resourceId: id, severity: 'warn' }, async (tx) => {
          const cur = await getPolicy(tx, ctx.tenantId, id, true);
          if (!cur) throw notFound();
          const next = await replacePolicy(tx, ctx.tenantId, id, { ...cur, ...known, extra: { ...cur.extra, ...extra } } as PolicyInput, ctx.actor.id);
          await emit(tx, ctx, 'policy.updated', next);
          return { result: next, before: policyView(cur), after: policyView(next) };
        });
        return { body: policyView(p) };
      },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, iface: 'admin',
      doc: { summary: 'Delete an admin policy', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        await audited(deps, ctx, req, { action: 'admin_policy.delete', resourceType: 'admin_policy', resourceId: id, severity: 'warn' }, async (tx) => {
          const gone = await deletePolicy(tx, ctx.tenantId, id);
          if (!gone) throw notFound();
          return { result: null, before: policyView(gone) };
        });
        return { status: 204 };
      },
    },
    setEnabled('activate'),
    setEnabled('deactivate'),
  ];
}
