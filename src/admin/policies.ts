import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { SchemaTypes } from '../generated/types.js';
import type { Route } from '../http/types.js';
import { errorDetails, validatorFor } from '../http/validate.js';
import { newId } from '../store/ids.js';
import type { PolicyRow } from '../store/policies.js';
import { adminRoute, fetched, found, listed } from './route.js';

const READ = 'admin:policies:read';
const WRITE = 'admin:policies:write';
const tags = ['admin-policies'];
const BASE = '/api/admin/admin-policies';
const KNOWN = new Set(['name', 'description', 'priority', 'effect', 'conditions', 'resource_types', 'actions', 'enabled', 'is_active']);
// Server-owned fields: ignored when sent, never stored among the extra properties.
const SERVER = new Set(['id', 'tenant_id', 'created_by', 'updated_by', 'created_at', 'updated_at']);

type PolicyBody = SchemaTypes['admin.policy-update'];
type Condition = SchemaTypes['admin.policy-condition'];

/**
 * The spec example's conditions (one object with `condition_type`, parameters under `params` or beside
 * it) as the list form that is stored and evaluated; the list form passes through. Throws 422 naming
 * `conditions` when the mapped condition is not a valid one.
 */
export function conditionList(c: unknown): Condition[] | undefined {
  if (c === undefined || Array.isArray(c)) return c as Condition[] | undefined;
  const { condition_type: type, params, ...rest } = c as { condition_type: string; params?: Record<string, unknown> };
  const mapped = { type, params: params ?? rest };
  const v = validatorFor('admin.policy-condition');
  if (!v(mapped)) {
    const inner = errorDetails(v.errors ?? []);
    throw new ValidationError(Object.fromEntries(Object.entries(inner).map(([k, m]) => [k === '_' ? 'conditions' : `conditions.${k}`, m])));
  }
  return [mapped as Condition];
}

/** `is_active` is the spec example's name for `enabled`: an alias, refused when the two disagree. */
function enabledOf(b: { enabled?: boolean | undefined; is_active?: boolean | undefined }): boolean | undefined {
  if (b.enabled !== undefined && b.is_active !== undefined && b.enabled !== b.is_active) {
    throw new ValidationError({ is_active: ['must equal enabled (is_active is an alias of enabled)'] });
  }
  return b.enabled ?? b.is_active;
}

/** The spec's policy object, with any extra properties the client stored echoed back. */
export function policyView(p: PolicyRow): Record<string, unknown> {
  return {
    ...p.extra, id: p.id, tenant_id: p.tenant_id, name: p.name, description: p.description, priority: p.priority, effect: p.effect,
    conditions: p.conditions, resource_types: p.resource_types, actions: p.actions, enabled: p.enabled, is_active: p.enabled, created_by: p.created_by,
    updated_by: p.updated_by, created_at: Number(p.created_at), updated_at: Number(p.updated_at),
  };
}

const notFound = () => new NotFound('policy_not_found', 'No such admin policy.');

/** The policy fields a body gives (absent ones undefined: the stored or default value stays). */
const fields = <B extends PolicyBody>(b: B) => ({
  name: b.name, description: b.description, priority: b.priority, effect: b.effect, conditions: conditionList(b.conditions),
  resource_types: b.resource_types, actions: b.actions, enabled: enabledOf(b),
});

/** The properties beyond the spec's that a client sent: stored and echoed back. */
function extras(b: PolicyBody): Record<string, unknown> {
  return Object.fromEntries(Object.entries(b).filter(([k]) => !KNOWN.has(k) && !SERVER.has(k)));
}

/** Checks the schema cannot express: time zones and CIDR prefixes. */
function checkConditions(conditions: SchemaTypes['admin.policy-condition'][]): void {
  const details: Record<string, string[]> = {};
  conditions.forEach((c, i) => {
    if (c.type === 'time_window' && c.params.timezone !== undefined) {
      try { new Intl.DateTimeFormat('en-US', { timeZone: c.params.timezone }); } catch { details[`conditions.${i}.params.timezone`] = ['is not a known IANA time zone']; }
    }
    if (c.type === 'ip_range') {
      for (const cidr of c.params.cidrs) {
        const [, bits] = cidr.split('/');
        const max = cidr.includes(':') ? 128 : 32;
        if (bits !== undefined && !(Number(bits) >= 0 && Number(bits) <= max)) (details[`conditions.${i}.params.cidrs`] ??= []).push(`${cidr} has an invalid prefix length`);
      }
    }
  });
  if (Object.keys(details).length) throw new ValidationError(details);
}

/** The data of a policy.* event. */
const eventData = (p: PolicyRow) => ({ policy_id: p.id, name: p.name, effect: p.effect, enabled: p.enabled, priority: p.priority });

/**
 * Admin policies of the current tenant (spec: Admin policy). Enabled policies are applied to every admin
 * request after permissions (policy-engine.ts). Create emits policy.created; every change policy.updated.
 */
export function policyRoutes(deps: Deps): Route[] {
  const setEnabled = (verb: 'activate' | 'deactivate'): Route => adminRoute(deps, {
    method: 'POST', path: `${BASE}/:id/${verb}`, permission: WRITE, tags, response: { 200: 'admin.policy' }, errors: [404],
    summary: verb === 'activate' ? 'Activate a policy (enabled true); it applies from the next request (policy.updated)' : 'Deactivate a policy (enabled false) (policy.updated)',
    audit: { action: `admin_policy.${verb}`, resourceType: 'admin_policy', severity: 'warn' },
    events: ['policy.updated'],
    handler: async ({ ctx, params, mutate }) => {
      const p = await mutate(async (_tx, store, emit) => {
        const cur = found(await store.policies.get(params.id!, true), notFound);
        const enabled = verb === 'activate';
        if (cur.enabled === enabled) return { result: cur, before: policyView(cur), after: policyView(cur), metadata: { changed: false } };
        const next = found(await store.policies.update(cur.id, { enabled }, ctx.actor.id), notFound);
        emit('policy.updated', eventData(next));
        return { result: next, before: policyView(cur), after: policyView(next) };
      });
      return { body: policyView(p) };
    },
  });
  return [
    adminRoute(deps, {
      method: 'GET', path: BASE, permission: READ, tags, query: 'query.admin-policy-list',
      summary: 'List admin policies, newest first', response: { 200: 'admin.policy-list' },
      handler: listed((store, q) => store.policies.list(q), policyView),
    }),
    adminRoute(deps, {
      method: 'POST', path: BASE, permission: WRITE, tags, body: 'admin.policy-create', response: { 201: 'admin.policy' },
      summary: 'Create an admin policy (disabled unless enabled is true; extra properties are stored and echoed) (policy.created)',
      audit: { action: 'admin_policy.create', resourceType: 'admin_policy', severity: 'warn' },
      events: ['policy.created'],
      handler: async ({ ctx, body, mutate }) => {
        const f = fields(body);
        checkConditions(f.conditions!);
        const p = await mutate(async (_tx, store, emit) => {
          const row = await store.policies.insert(newId('pol'), {
            ...f, name: body.name, priority: body.priority, effect: body.effect, resource_types: body.resource_types, actions: body.actions,
            conditions: f.conditions!, extra: extras(body),
          }, ctx.actor.id);
          emit('policy.created', eventData(row));
          return { result: row, resourceId: row.id, after: policyView(row) };
        });
        return { status: 201, body: policyView(p) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/:id`, permission: READ, tags,
      summary: 'Get an admin policy', response: { 200: 'admin.policy' }, errors: [404],
      handler: fetched((store, id) => store.policies.get(id), policyView, notFound),
    }),
    adminRoute(deps, {
      method: 'PUT', path: `${BASE}/:id`, permission: WRITE, tags, body: 'admin.policy-update', response: { 200: 'admin.policy' }, errors: [404],
      summary: 'Update an admin policy: the fields given replace the stored ones (policy.updated)',
      audit: { action: 'admin_policy.update', resourceType: 'admin_policy', severity: 'warn' },
      events: ['policy.updated'],
      handler: async ({ ctx, body, params, mutate }) => {
        const f = fields(body);
        if (f.conditions) checkConditions(f.conditions);
        const p = await mutate(async (_tx, store, emit) => {
          const cur = found(await store.policies.get(params.id!, true), notFound);
          const next = found(await store.policies.update(cur.id, { ...f, extra: extras(body) }, ctx.actor.id), notFound);
          emit('policy.updated', eventData(next));
          return { result: next, before: policyView(cur), after: policyView(next) };
        });
        return { body: policyView(p) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: `${BASE}/:id`, permission: WRITE, tags,
      summary: 'Delete an admin policy (a system policy is 409)', response: { 204: null },
      audit: { action: 'admin_policy.delete', resourceType: 'admin_policy', severity: 'warn' },
      errors: [404, 409],
      handler: async ({ params, mutate }) => {
        await mutate(async (_tx, store) => {
          const cur = found(await store.policies.get(params.id!, true), notFound);
          // is_system marks a policy the platform relies on: it may be disabled, never deleted.
          if (cur.extra?.is_system === true) throw new Conflict('conflict', 'A system policy (is_system true) cannot be deleted.');
          return { result: null, before: policyView(found(await store.policies.delete(cur.id), notFound)) };
        });
        return { status: 204 };
      },
    }),
    setEnabled('activate'),
    setEnabled('deactivate'),
  ];
}
