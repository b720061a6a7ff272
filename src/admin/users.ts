import type { Deps } from '../deps.js';
import { AppError, Conflict, NotFound } from '../errors.js';
import { recordEvent } from '../events/outbox.js';
import type { Route } from '../http/types.js';
import type { TxSql } from '../store/sql.js';
import { getUser, insertUser, type User } from '../users/repository.js';
import { adminContext } from './context.js';
import { audited } from './mutate.js';
import { decodeCursor, page } from './pagination.js';
import { deleteUser, listUsers, lockUser, revokeUserRefreshTokens, setUserStatus, updateUser, type UserFilter, type UserPatch } from './repo/users.js';


const READ = 'admin:users:read';
const WRITE = 'admin:users:write';
const tags = ['users'];
// Longest an access token can live (ACCESS_TOKEN_TTL_SECONDS and client TTLs are capped at a day).
const MAX_ACCESS_TTL = 86_400;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function userView(u: User): Record<string, unknown> {
  return {
    id: u.id, tenant_id: u.tenant_id, email: u.email, name: u.name, status: u.status, email_verified: u.email_verified,
    metadata: u.metadata, created_at: Number(u.created_at), updated_at: Number(u.updated_at),
  };
}

export const userNotFound = () => new NotFound('user_not_found', 'No such user.');

function checkEmail(email: string | undefined): void {
  if (email !== undefined && !EMAIL_RE.test(email)) throw new AppError(422, 'invalid_email', 'The email address is not valid.', { details: { email: ['is not a valid email address'] } });
}

async function mustLock(tx: TxSql, tenantId: string, id: string): Promise<User> {
  const u = await lockUser(tx, tenantId, id);
  if (!u) throw userNotFound();
  return u;
}

/** Users of the current tenant: CRUD, suspend and unsuspend, each emitting its user.* event. */
export function userRoutes(deps: Deps): Route[] {
  // Suspension and deletion cut every token of the user at once.
  const cutTokens = (tenantId: string, userId: string) => deps.tokens.revocations.revokeBefore(tenantId, 'sub', userId, Date.now(), MAX_ACCESS_TTL);
  const setStatus = (suspend: boolean): Route => ({
    method: 'POST', path: `/api/admin/users/:id/${suspend ? 'suspend' : 'unsuspend'}`, iface: 'admin', body: 'none',
    doc: { summary: suspend ? 'Suspend a user: sign-in refused, tokens revoked (user.suspended)' : 'Lift a suspension (user.unsuspended)', tags, permission: WRITE, responses: { 200: 'admin.user' }, errors: [401, 403, 404], security: 'bearer' },
    handler: async (req) => {
      const ctx = await adminContext(deps, req, WRITE);
      const id = req.params.id!;
      const u = await audited(deps, ctx, req, { action: suspend ? 'user.suspend' : 'user.unsuspend', resourceType: 'user', resourceId: id, severity: suspend ? 'warn' : 'info' }, async (tx) => {
        const cur = await mustLock(tx, ctx.tenantId, id);
        const want = suspend ? 'suspended' : 'active';
        // Idempotent: a user already in the wanted state is returned unchanged and no event is emitted.
        if (cur.status === want) return { result: cur, before: userView(cur), after: userView(cur), metadata: { changed: false } };
        if (!suspend && cur.status !== 'suspended') throw new Conflict('conflict', `The user is ${cur.status}, not suspended.`);
        const next = (await setUserStatus(tx, ctx.tenantId, id, want))!;
        if (suspend) await revokeUserRefreshTokens(tx, ctx.tenantId, id);
        await recordEvent(tx, { tenantId: ctx.tenantId, event: suspend ? 'user.suspended' : 'user.unsuspended', data: { user_id: id, email: next.email } });
        return { result: next, before: userView(cur), after: userView(next) };
      });
      if (suspend) await cutTokens(ctx.tenantId, id);
      return { body: userView(u) };
    },
  });
  return [
    {
      method: 'GET', path: '/api/admin/users', iface: 'admin', querySchema: 'query.admin-user-list',
      doc: { summary: 'List users, newest first (filters: status, email prefix, q, role_id)', tags, permission: READ, responses: { 200: 'admin.user-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as Omit<UserFilter, 'cursor'> & { cursor?: string };
        const p = page(await listUsers(deps.sql, ctx.tenantId, { ...q, cursor: decodeCursor(q.cursor) }), q.limit);
        return { body: { items: p.items.map(userView), cursor: p.next } };
      },
    },
    {
      method: 'POST', path: '/api/admin/users', iface: 'admin', body: 'json', bodySchema: 'admin.user-create',
      doc: { summary: 'Create a user (user.created)', tags, permission: WRITE, responses: { 201: 'admin.user' }, errors: [401, 403, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { email: string; name?: string | null; email_verified?: boolean; metadata?: Record<string, unknown> };
        checkEmail(b.email);
        const u = await audited(deps, ctx, req, { action: 'user.create', resourceType: 'user' }, async (tx) => {
          const created = await insertUser(tx, ctx.tenantId, { email: b.email, name: b.name ?? null, emailVerified: b.email_verified ?? false, metadata: b.metadata ?? {} });
          if (!created) throw new Conflict('email_already_exists', 'A user with this email already exists in the tenant.');
          await recordEvent(tx, { tenantId: ctx.tenantId, event: 'user.created', data: { user_id: created.id, email: created.email } });
          return { result: created, resourceId: created.id, after: userView(created) };
        });
        return { status: 201, body: userView(u) };
      },
    },
    {
      method: 'GET', path: '/api/admin/users/:id', iface: 'admin',
      doc: { summary: 'Get a user with its roles', tags, permission: READ, responses: { 200: 'admin.user' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const u = await getUser(deps.sql, ctx.tenantId, req.params.id!);
        if (!u) throw userNotFound();
        const roles = await deps.store.forTenant(ctx.tenantId).roles.ofUser(u.id);
        return { body: { ...userView(u), roles: roles.map((r) => ({ id: r.role_id, name: r.name })) } };
      },
    },
    {
      method: 'PUT', path: '/api/admin/users/:id', iface: 'admin', body: 'json', bodySchema: 'admin.user-update',
      doc: { summary: 'Update a user: the fields given replace the stored ones (user.updated)', tags, permission: WRITE, responses: { 200: 'admin.user' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const patch = req.data as UserPatch;
        checkEmail(patch.email);
        const id = req.params.id!;
        const u = await audited(deps, ctx, req, { action: 'user.update', resourceType: 'user', resourceId: id }, async (tx) => {
          const cur = await mustLock(tx, ctx.tenantId, id);
          const next = await updateUser(tx, ctx.tenantId, id, patch);
          if (next === 'email_taken') throw new Conflict('email_already_exists', 'A user with this email already exists in the tenant.');
          if (!next) throw userNotFound();
          await recordEvent(tx, { tenantId: ctx.tenantId, event: 'user.updated', data: { user_id: id, email: next.email, changed: Object.keys(patch).sort() } });
          return { result: next, before: userView(cur), after: userView(next) };
        });
        return { body: userView(u) };
      },
    },
    {
      method: 'DELETE', path: '/api/admin/users/:id', iface: 'admin',
      doc: { summary: 'Delete a user, its role assignments and tokens (user.deleted)', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        await audited(deps, ctx, req, { action: 'user.delete', resourceType: 'user', resourceId: id, severity: 'warn' }, async (tx) => {
          const gone = await deleteUser(tx, ctx.tenantId, id);
          if (!gone) throw userNotFound();
          await revokeUserRefreshTokens(tx, ctx.tenantId, id);
          await recordEvent(tx, { tenantId: ctx.tenantId, event: 'user.deleted', data: { user_id: id, email: gone.email } });
          return { result: null, before: userView(gone) };
        });
        await cutTokens(ctx.tenantId, id);
        return { status: 204 };
      },
    },
    setStatus(true),
    setStatus(false),
  ];
}
