import type { Deps } from '../deps.js';
import { Conflict, NotFound } from '../errors.js';
import type { SchemaTypes } from '../generated/types.js';
import type { Route } from '../http/types.js';
import type { TenantStore } from '../store/index.js';
import type { User } from '../store/users.js';
import { endLoginSessions } from '../login/end-sessions.js';
import { InvalidEmail, isEmail } from '../users/email.js';
import { adminRoute, listed, found } from './route.js';

const READ = 'admin:users:read';
const WRITE = 'admin:users:write';
const tags = ['users'];
// Longest an access token can live (ACCESS_TOKEN_TTL_SECONDS and client TTLs are capped at a day).
const MAX_ACCESS_TTL = 86_400;

/** A user as the admin API shows it (`admin.user`, without the roles only GET by id adds). */
export function userView(u: User): SchemaTypes['admin.user'] {
  return {
    id: u.id, tenant_id: u.tenant_id, email: u.email, name: u.name, status: u.status, email_verified: u.email_verified,
    metadata: u.metadata, created_at: Number(u.created_at), updated_at: Number(u.updated_at),
  };
}

export const userNotFound = () => new NotFound('user_not_found', 'No such user.');
const emailTaken = () => new Conflict('email_already_exists', 'A user with this email already exists in the tenant.');

/** The admin API accepts the addresses the login form accepts, and says so with 422 invalid_email. */
function checkEmail(email: string | undefined): void {
  if (email !== undefined && !isEmail(email)) throw new InvalidEmail();
}

async function mustLock(store: TenantStore, id: string): Promise<User> {
  const u = found(await store.users.lock(id), userNotFound);
  return u;
}

/** Users of the current tenant: CRUD, suspend and unsuspend, each emitting its user.* event. */
export function userRoutes(deps: Deps): Route[] {
  // Suspension and deletion cut every token of the user at once; they and locking end the login sessions.
  const cutTokens = (d: Deps, tenantId: string, userId: string) => d.tokens.revocations.revokeBefore(tenantId, 'sub', userId, Date.now(), MAX_ACCESS_TTL, d.trace);
  const setStatus = (suspend: boolean): Route => adminRoute(deps, {
    method: 'POST', path: `/api/admin/users/:id/${suspend ? 'suspend' : 'unsuspend'}`, permission: WRITE, tags,
    summary: suspend ? 'Suspend a user: sign-in refused, tokens revoked, login sessions ended (user.suspended)' : 'Lift a suspension (user.unsuspended)',
    response: { 200: 'admin.user' }, errors: suspend ? [404] : [404, 409],
    audit: { action: suspend ? 'user.suspend' : 'user.unsuspend', resourceType: 'user', severity: suspend ? 'warn' : 'info' },
    events: [suspend ? 'user.suspended' : 'user.unsuspended'],
    handler: async ({ deps: d, ctx, params, mutate }) => {
      const id = params.id!;
      const u = await mutate(async (_tx, store, emit) => {
        const cur = await mustLock(store, id);
        const want = suspend ? 'suspended' : 'active';
        // Idempotent: a user already in the wanted state is returned unchanged and no event is emitted.
        if (cur.status === want) return { result: cur, before: userView(cur), after: userView(cur), metadata: { changed: false } };
        if (!suspend && cur.status !== 'suspended') throw new Conflict('conflict', `The user is ${cur.status}, not suspended.`);
        const next = found(await store.users.setStatus(id, want), userNotFound);
        if (suspend) await store.users.revokeRefreshTokens(id);
        emit(suspend ? 'user.suspended' : 'user.unsuspended', { user_id: id, email: next.email });
        return { result: next, before: userView(cur), after: userView(next) };
      });
      if (suspend) await Promise.all([cutTokens(d, ctx.tenantId, id), endLoginSessions(d, ctx.tenantId, id)]);
      return { body: userView(u) };
    },
  });
  // Lock/unlock: a locked user cannot sign in (403 user_locked) until unlocked, and the login sessions
  // end (the browser must sign in again once unlocked); unlike suspension the tokens already issued stay
  // valid (as Keycloak's brute-force lockout leaves sessions at applications alone).
  const setLock = (lock: boolean): Route => adminRoute(deps, {
    method: 'POST', path: `/api/admin/users/:id/${lock ? 'lock' : 'unlock'}`, permission: WRITE, tags,
    summary: lock ? 'Lock a user: sign-in refused with user_locked, login sessions ended (user.updated)' : 'Unlock a user and clear its failed sign-ins (user.updated)',
    response: { 200: 'admin.user' }, errors: [404, 409],
    audit: { action: lock ? 'user.lock' : 'user.unlock', resourceType: 'user', severity: lock ? 'warn' : 'info' },
    events: ['user.updated'],
    handler: async ({ deps: d, ctx, params, mutate }) => {
      const id = params.id!;
      const u = await mutate(async (_tx, store, emit) => {
        const cur = await mustLock(store, id);
        const want = lock ? 'locked' : 'active';
        if (cur.status === want) return { result: cur, before: userView(cur), after: userView(cur), metadata: { changed: false } };
        if (cur.status === 'suspended') throw new Conflict('conflict', 'The user is suspended; unsuspend it first.');
        const next = found(await store.users.setLockStatus(id, want), userNotFound);
        emit('user.updated', { user_id: id, email: next.email, changed: ['status'], status: want });
        return { result: next, before: userView(cur), after: userView(next) };
      });
      if (lock) await endLoginSessions(d, ctx.tenantId, id);
      return { body: userView(u) };
    },
  });
  return [
    setLock(true),
    setLock(false),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/settings/login-lockout', permission: 'admin:settings:read', tags: ['settings'],
      summary: 'Automatic user lock after consecutive failed sign-ins (0: never)', response: { 200: 'admin.login-lockout' },
      handler: async ({ store }) => ({ body: { max_failed_logins: await store.users.lockoutThreshold() } }),
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/settings/login-lockout', permission: 'admin:settings:write', tags: ['settings'], body: 'admin.login-lockout-update',
      summary: 'Set the automatic user lock threshold of the tenant', response: { 200: 'admin.login-lockout' },
      audit: { action: 'settings.login_lockout.update', resourceType: 'settings' },
      handler: async ({ body, mutate }) => {
        const max = await mutate(async (_tx, store) => {
          const before = await store.users.lockoutThreshold();
          const after = await store.users.setLockoutThreshold(body.max_failed_logins);
          return { result: after, resourceId: 'login-lockout', before: { max_failed_logins: before }, after: { max_failed_logins: after } };
        });
        return { body: { max_failed_logins: max } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users', permission: READ, tags, query: 'query.admin-user-list',
      summary: 'List users, newest first (filters: status, email prefix, q, role_id)', response: { 200: 'admin.user-list' },
      handler: listed((store, q) => store.users.list(q), userView),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/users', permission: WRITE, tags, body: 'admin.user-create',
      summary: 'Create a user (user.created)', response: { 201: 'admin.user' }, errors: [409],
      audit: { action: 'user.create', resourceType: 'user' },
      events: ['user.created'],
      handler: async ({ body, mutate }) => {
        checkEmail(body.email);
        const u = await mutate(async (_tx, store, emit) => {
          const created = found(await store.users.insert({ email: body.email, name: body.name, emailVerified: body.email_verified, metadata: body.metadata }), emailTaken);
          emit('user.created', { user_id: created.id, email: created.email });
          return { result: created, resourceId: created.id, after: userView(created) };
        });
        return { status: 201, body: userView(u) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users/:id', permission: READ, tags,
      summary: 'Get a user with its roles', response: { 200: 'admin.user' }, errors: [404],
      handler: async ({ params, store }) => {
        const u = found(await store.users.get(params.id!), userNotFound);
        const roles = await store.roles.ofUser(u.id);
        return { body: { ...userView(u), roles: roles.map((r) => ({ id: r.role_id, name: r.name })) } };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/users/:id', permission: WRITE, tags, body: 'admin.user-update',
      summary: 'Update a user: the fields given replace the stored ones (user.updated)', response: { 200: 'admin.user' }, errors: [404, 409],
      audit: { action: 'user.update', resourceType: 'user' },
      events: ['user.updated'],
      handler: async ({ body, params, mutate }) => {
        checkEmail(body.email);
        const id = params.id!;
        const u = await mutate(async (_tx, store, emit) => {
          const cur = await mustLock(store, id);
          const next = await store.users.update(id, body);
          if (next === 'email_taken') throw emailTaken();
          if (!next) throw userNotFound();
          emit('user.updated', { user_id: id, email: next.email, changed: Object.keys(body).sort() });
          return { result: next, before: userView(cur), after: userView(next) };
        });
        return { body: userView(u) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/users/:id', permission: WRITE, tags,
      summary: 'Delete a user, its role assignments, tokens and login sessions (user.deleted)', response: { 204: null }, errors: [404],
      audit: { action: 'user.delete', resourceType: 'user', severity: 'warn' },
      events: ['user.deleted'],
      handler: async ({ deps: d, ctx, params, mutate }) => {
        const id = params.id!;
        await mutate(async (_tx, store, emit) => {
          const gone = found(await store.users.delete(id), userNotFound);
          await store.users.revokeRefreshTokens(id);
          emit('user.deleted', { user_id: id, email: gone.email });
          return { result: null, before: userView(gone) };
        });
        await Promise.all([cutTokens(d, ctx.tenantId, id), endLoginSessions(d, ctx.tenantId, id)]);
        return { status: 204 };
      },
    }),
    setStatus(true),
    setStatus(false),
  ];
}
