import type { Deps } from '../deps.js';
import { AppError, Forbidden } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { decodeCursor, page, type Cursor } from '../store/cursor.js';
import type { TenantStore } from '../store/index.js';
import type { AuditSeverity } from '../store/audit-log.js';
import type { TxSql } from '../sql.js';
import type { TenantMode } from './checks/resolve-tenant.js';
import { adminContext } from './context.js';
import { depsFor } from '../request-deps.js';
import { assertDeclared, declareEvents, type DeclaredEvents, type PendingEvent } from '../events/declare.js';
import type { EventName } from '../events/names.js';
import type { AdminContext } from './types.js';

import type { Data, SchemaId } from '../http/route.js';
type Method = Route['method'];

/** What the mutation's audit entry records, declared once per route. */
export interface AuditSpec {
  /** `<resource>.<verb>`, e.g. `user.create`. */
  action: string;
  resourceType: string;
  severity?: AuditSeverity;
  /** Path parameter naming the resource when it is known before the change (`id` by default, when the path has it). */
  resourceParam?: string;
}

/** What a mutation hands back: its result, and what the audit entry says of it. */
export interface MutationOutcome<T> {
  result: T;
  resourceId?: string;
  before?: unknown;
  after?: unknown;
  metadata?: Record<string, unknown>;
  /** The id to give the audit entry, when the result names it (e.g. `audit_id` of a rewrap job creation). */
  auditId?: string;
}

/** Adds an event to the change: `mutate` writes it to the outbox in the change's transaction. */
export type Emit<E extends EventName> = (event: E, data: Record<string, unknown>) => void;

/** A mutation: the change, run in `tx`; the events it emits must be declared by its route. */
export type Mutation<T, E extends EventName = never> = (tx: TxSql, store: TenantStore, emit: Emit<E>) => Promise<MutationOutcome<T>>;

/** Everything a handler needs, resolved and validated before it runs. */
export interface AdminCall<B, Q, E extends EventName = never> {
  deps: Deps;
  req: HttpRequest;
  ctx: AdminContext;
  params: Record<string, string>;
  body: B;
  query: Q;
  /** The repositories of the request's tenant. */
  store: TenantStore;
  /**
   * Runs the change in one transaction together with its audit entry and the events it emits (each
   * declared in the route's `events`); a failed change rolls back and is then audited on its own as
   * `failure`. Mutating routes must call it exactly once.
   */
  mutate<T>(fn: Mutation<T, E>): Promise<T>;
  /** Says that this successful request changed nothing (an idempotent replay), so no audit entry is owed. */
  unchanged(): void;
}

export interface AdminRouteSpec<B extends SchemaId | undefined, Q extends SchemaId | undefined, E extends EventName = never> {
  method: Method;
  /** Path with ':name' parameters. */
  path: string;
  summary: string;
  tags: string[];
  /** The permission the caller needs; documented in OpenAPI as x-permission. */
  permission: string;
  /** `selected` (default) honours X-Tenant-Id within the token's tenant scopes; `own` ignores it. */
  tenant?: TenantMode;
  /** Platform admins only (tenant scope `all`): anyone else is 403 forbidden, before the body is read. */
  platformOnly?: boolean;
  body?: B;
  query?: Q;
  /** Response schema ids by status (null: no body). */
  response: Record<number, SchemaId | null>;
  /** Error statuses beyond the ones every admin route may answer (401, 403, 422). */
  errors?: number[];
  /** Required on every POST, PUT, PATCH and DELETE: their changes are audited. */
  audit?: AuditSpec;
  /** The webhook events its mutations may emit (through `mutate`'s `emit`), written in the change's transaction. */
  events?: readonly E[];
  handler: (call: AdminCall<Data<B>, Data<Q>, E>) => Promise<Reply>;
}

const MUTATING = new Set<Method>(['POST', 'PUT', 'PATCH', 'DELETE']);
const NONE = declareEvents<EventName>([]);

/** Request metadata every audit entry carries. */
function requestMeta(req: HttpRequest): Record<string, unknown> {
  return { request_id: req.requestId, ip: req.ip, user_agent: req.headers['user-agent'] ?? null };
}

/** Who made an audited change, in which tenant: an admin, or a protocol caller such as a client managing its own registration (RFC 7592). */
export type Actor = Pick<AdminContext, 'tenantId' | 'actor'>;

/** What an audited change declares: its audit entry and the events it may emit. */
type ChangeSpec = AuditSpec & { resourceId?: string | undefined; events?: DeclaredEvents<EventName> | undefined; route?: string };

/**
 * Runs `fn` in one transaction with its audit entry and the events it emitted; on failure the change
 * rolls back and a `failure` entry is written on its own.
 */
export async function auditedChange<T, E extends EventName = never>(deps: Deps, ctx: Actor, req: HttpRequest, spec: ChangeSpec, fn: Mutation<T, E>): Promise<T> {
  try {
    return await auditedTransaction(deps, ctx, req, spec, fn);
  } finally {
    // Committed or rolled back (its failure entry is a write too): reads that follow wait for the replica to pass it.
    await deps.store.replica?.wrote().catch((err: Error) => deps.log.warn({ err: err.message }, 'read replica fence not recorded'));
  }
}

async function auditedTransaction<T, E extends EventName>(deps: Deps, ctx: Actor, req: HttpRequest, spec: ChangeSpec, fn: Mutation<T, E>): Promise<T> {
  const declared = spec.events ?? NONE;
  try {
    return await deps.store.transaction(ctx.tenantId, async (store, tx) => {
      const events: Array<PendingEvent<E>> = [];
      const out = await fn(tx, store, (event, data) => {
        assertDeclared(declared.names, event, spec.route ?? spec.action);
        events.push({ event, data });
      });
      // In the order emitted, after the change and in its transaction (outbox: the events exist iff it commits).
      if (events.length) await declared.emitAll(tx, ctx.tenantId, events);
      await store.auditLog.record(ctx.actor, {
        ...(out.auditId ? { id: out.auditId } : {}), action: spec.action, resourceType: spec.resourceType, resourceId: out.resourceId ?? spec.resourceId ?? null,
        severity: spec.severity ?? 'info', metadata: { ...requestMeta(req), ...out.metadata }, before: out.before, after: out.after,
      });
      return out.result;
    });
  } catch (err) {
    const known = err instanceof AppError;
    await deps.store.forTenant(ctx.tenantId).auditLog.record(ctx.actor, {
      action: spec.action, resourceType: spec.resourceType, resourceId: spec.resourceId ?? null, result: 'failure',
      severity: known && err.status < 500 ? 'warn' : 'error',
      metadata: { ...requestMeta(req), error: known ? err.code : 'internal_error', status: known ? err.status : 500 },
    }).catch((e) => deps.log.error({ err: e }, 'audit entry for a failed admin mutation not written'));
    throw err;
  }
}

/**
 * One declaration per admin endpoint: its OpenAPI entry, the permission check, the tenant, the typed
 * and validated body and query, and the audit of every mutation in the mutation's own transaction.
 * Credentials are checked before the body is validated, so an unauthenticated caller learns nothing
 * about the body's shape.
 */
export function adminRoute<B extends SchemaId | undefined = undefined, Q extends SchemaId | undefined = undefined, const E extends EventName = never>(
  deps: Deps, spec: AdminRouteSpec<B, Q, E>,
): Route {
  const mutating = MUTATING.has(spec.method);
  if (mutating && !spec.audit) throw new TypeError(`${spec.method} ${spec.path}: an admin mutation must declare its audit entry`);
  if (spec.events?.length && !mutating) throw new TypeError(`${spec.method} ${spec.path}: a read declares no events`);
  const events = declareEvents<EventName>(spec.events ?? []);
  const route = `${spec.method} ${spec.path}`;
  const param = spec.audit?.resourceParam ?? (spec.path.includes('/:id') ? 'id' : undefined);
  const ctxOf = new WeakMap<HttpRequest, AdminContext>();
  return {
    method: spec.method,
    path: spec.path,
    iface: 'admin',
    body: spec.body ? 'json' : 'none',
    ...(spec.body ? { bodySchema: spec.body } : {}),
    ...(spec.query ? { querySchema: spec.query } : {}),
    doc: {
      summary: spec.summary, tags: spec.tags, permission: spec.permission, security: 'bearer',
      responses: spec.response, errors: [401, 403, ...(spec.errors ?? [])],
    },
    authenticate: async (req) => {
      const ctx = await adminContext(depsFor(deps, req), req, spec.permission, spec.tenant);
      if (spec.platformOnly && !ctx.platform) throw new Forbidden('forbidden', 'Only platform administrators may do this.');
      ctxOf.set(req, ctx);
    },
    handler: async (req) => {
      const ctx = ctxOf.get(req)!;
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const d = depsFor(deps, req);
      if (!mutating && d.store.replica) return readOnReplica(d, ctx, req, spec.handler);
      let mutations = 0;
      let unchanged = false;
      const call: AdminCall<Data<B>, Data<Q>, E> = {
        deps: d, req, ctx, params: req.params,
        body: req.data as Data<B>, query: req.queryData as Data<Q>,
        store: d.store.forTenant(ctx.tenantId),
        mutate: (fn) => {
          mutations++;
          const resourceId = param ? req.params[param] : undefined;
          return auditedChange(d, ctx, req, { ...spec.audit!, resourceId, events, route }, fn);
        },
        unchanged: () => { unchanged = true; },
      };
      const reply = await spec.handler(call);
      // A mutation that answered success without its audit entry is a bug in the route, not the caller's.
      if (mutating && (mutations === 0) !== unchanged && (reply.status ?? 200) < 300) {
        throw new Error(`${spec.method} ${spec.path} answered success with ${mutations} audited changes${unchanged ? ' after saying it changed nothing' : ''}`);
      }
      return reply;
    },
  };
}

/**
 * A GET with a read replica configured: its `store` reads from the replica (once it has passed the last
 * admin change, src/store/replica.ts). A read the replica cannot serve (unreachable, a query cancelled by
 * recovery) runs again on the primary: a GET changes nothing, so running it twice is safe.
 */
async function readOnReplica<B, Q, E extends EventName>(deps: Deps, ctx: AdminContext, req: HttpRequest, handler: (call: AdminCall<B, Q, E>) => Promise<Reply>): Promise<Reply> {
  const call = (store: TenantStore): AdminCall<B, Q, E> => ({
    deps, req, ctx, params: req.params, body: req.data as B, query: req.queryData as Q, store,
    mutate: () => { throw new Error(`GET ${req.path}: a read may not change anything`); },
    unchanged: () => {},
  });
  const store = await deps.store.forReading(ctx.tenantId);
  if (store.db === deps.sql) return handler(call(store));
  try {
    return await handler(call(store));
  } catch (err) {
    if (err instanceof AppError) throw err;
    deps.log.warn({ err: (err as Error).message }, 'admin read failed on the replica; read again on the primary');
    return handler(call(deps.store.forTenant(ctx.tenantId)));
  }
}

/** A list endpoint's handler: one keyset page of the repository's rows, each through `view`. */
export function listed<Q extends { limit: number; cursor?: string | undefined }, R extends { created_at: number | string; id: string }>(
  load: (store: TenantStore, q: Omit<Q, 'cursor'> & { cursor: Cursor | undefined }) => Promise<R[]>, view: (r: R) => unknown,
): (call: { store: TenantStore; query: Q }) => Promise<Reply> {
  return async ({ store, query }) => {
    const p = page(await load(store, { ...query, cursor: decodeCursor(query.cursor) }), query.limit);
    return { body: { items: p.items.map(view), cursor: p.next } };
  };
}

/** A get-by-id handler: the row named by the path's `param` through `view`, or the resource's 404. */
export function fetched<R>(load: (store: TenantStore, id: string) => Promise<R | null>, view: (r: R) => unknown, notFound: () => Error, param = 'id')
  : (call: { store: TenantStore; params: Record<string, string> }) => Promise<Reply> {
  return async ({ store, params }) => ({ body: view(found(await load(store, params[param]!), notFound)) });
}

/** The row, or the resource's 404. */
export function found<R>(row: R | null | undefined, notFound: () => Error): R {
  if (row === null || row === undefined) throw notFound();
  return row;
}

/** A plain delete handler: removes the row named by the path's `id` in an audited change (its view as `before`), then 204. */
export function deleted<R>(remove: (store: TenantStore, id: string) => Promise<R | null>, view: (r: R) => unknown, notFound: () => Error)
  : (call: { params: Record<string, string>; mutate: AdminCall<unknown, unknown>['mutate'] }) => Promise<Reply> {
  return async ({ params, mutate }) => {
    await mutate(async (_tx, store) => ({ result: null, before: view(found(await remove(store, params.id!), notFound)) }));
    return { status: 204 };
  };
}
