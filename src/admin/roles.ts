import type { Deps } from '../deps.js';
import { Conflict, NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { newId } from '../store/ids.js';
import type { Role } from '../store/roles.js';
import { assertGrantable } from './escalation.js';
import { adminRoute, deleted, fetched, found, listed } from './route.js';
import { userNotFound } from './users.js';

const READ = 'admin:roles:read';
const WRITE = 'admin:roles:write';
const tags = ['roles'];

export function roleView(r: Role): Record<string, unknown> {
  return { id: r.id, tenant_id: r.tenant_id, name: r.name, description: r.description, permissions: r.permissions, created_at: Number(r.created_at), updated_at: Number(r.updated_at) };
}

const roleNotFound = () => new NotFound('role_not_found', 'No such role.');
const nameTaken = () => new Conflict('conflict', 'A role with this name already exists in the tenant.');

/** Roles (named permission sets) of the current tenant and their assignment to users. */
export function roleRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/roles', permission: READ, tags, query: 'query.admin-role-list',
      summary: 'List roles, newest first', response: { 200: 'admin.role-list' },
      handler: listed((store, q) => store.roles.list(q), roleView),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/roles', permission: WRITE, tags, body: 'admin.role-create',
      summary: 'Create a role (admin permissions only up to the caller\'s own)', response: { 201: 'admin.role' }, errors: [409],
      audit: { action: 'role.create', resourceType: 'role' },
      handler: async ({ ctx, body, mutate }) => {
        assertGrantable(ctx, body.permissions);
        const r = await mutate(async (_tx, store) => {
          const role = found(await store.roles.insert(newId('role'), body), nameTaken);
          return { result: role, resourceId: role.id, after: roleView(role) };
        });
        return { status: 201, body: roleView(r) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/roles/:id', permission: READ, tags,
      summary: 'Get a role', response: { 200: 'admin.role' }, errors: [404],
      handler: fetched((store, id) => store.roles.get(id), roleView, roleNotFound),
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/roles/:id', permission: WRITE, tags, body: 'admin.role-update',
      summary: 'Update a role: the fields given replace the stored ones', response: { 200: 'admin.role' }, errors: [404, 409],
      audit: { action: 'role.update', resourceType: 'role' },
      handler: async ({ ctx, body, params, mutate }) => {
        if (body.permissions) assertGrantable(ctx, body.permissions);
        const r = await mutate(async (_tx, store) => {
          const cur = found(await store.roles.get(params.id!), roleNotFound);
          const next = await store.roles.update(cur.id, body);
          if (next === 'name_taken') throw nameTaken();
          if (!next) throw roleNotFound();
          return { result: next, before: roleView(cur), after: roleView(next) };
        });
        return { body: roleView(r) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/roles/:id', permission: WRITE, tags,
      summary: 'Delete a role and its assignments', response: { 204: null }, errors: [404],
      audit: { action: 'role.delete', resourceType: 'role', severity: 'warn' },
      handler: deleted((store, id) => store.roles.delete(id), roleView, roleNotFound),
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users/:id/roles', permission: READ, tags,
      summary: 'Roles assigned to a user', response: { 200: 'admin.user-roles' }, errors: [404],
      handler: async ({ params, store }) => {
        const u = found(await store.users.get(params.id!), userNotFound);
        const roles = await store.roles.ofUser(u.id);
        return { body: { user_id: u.id, roles: roles.map((r) => ({ ...r, assigned_at: Number(r.assigned_at) })) } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/users/:id/roles', permission: WRITE, tags, body: 'admin.role-assign',
      summary: 'Assign a role to a user (role.assigned; 409 role_already_assigned)', response: { 201: 'admin.role-assignment' }, errors: [404, 409],
      audit: { action: 'role.assign', resourceType: 'user' },
      events: ['role.assigned'],
      handler: async ({ ctx, body, params, mutate }) => {
        const userId = params.id!;
        const out = await mutate(async (_tx, store, emit) => {
          if (!(await store.users.lock(userId))) throw userNotFound();
          const role = found(await store.roles.get(body.role_id), roleNotFound);
          // Assigning a role hands out its permissions: the same no-escalation rule as granting them.
          assertGrantable(ctx, role.permissions);
          const a = await store.roles.assign(userId, role.id, ctx.actor.id);
          if (!a) throw new Conflict('role_already_assigned', 'The user already has this role.');
          emit('role.assigned', { user_id: userId, role_id: role.id, role: role.name });
          const result = { user_id: userId, role_id: role.id, role: role.name, assigned_at: Number(a.assigned_at), assigned_by: ctx.actor.id };
          return { result, after: result, metadata: { role_id: role.id } };
        });
        return { status: 201, body: out };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/users/:id/roles/:roleId', permission: WRITE, tags,
      summary: 'Unassign a role from a user (role.unassigned)', response: { 204: null }, errors: [404],
      audit: { action: 'role.unassign', resourceType: 'user' },
      events: ['role.unassigned'],
      handler: async ({ params, mutate }) => {
        const userId = params.id!;
        await mutate(async (_tx, store, emit) => {
          if (!(await store.users.lock(userId))) throw userNotFound();
          const role = found(await store.roles.get(params.roleId!), roleNotFound);
          if (!(await store.roles.unassign(userId, role.id))) throw new NotFound('role_not_found', 'The user does not have this role.');
          emit('role.unassigned', { user_id: userId, role_id: role.id, role: role.name });
          return { result: null, before: { user_id: userId, role_id: role.id, role: role.name }, metadata: { role_id: role.id } };
        });
        return { status: 204 };
      },
    }),
  ];
}
