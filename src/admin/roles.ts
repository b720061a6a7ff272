import type { Deps } from '../deps.js';
import { Conflict, NotFound } from '../errors.js';
import { recordEvent } from '../events/outbox.js';
import type { Route } from '../http/types.js';
import { getUser } from '../users/repository.js';
import { adminContext } from './context.js';
import { assertGrantable } from './escalation.js';
import { audited } from './mutate.js';
import { decodeCursor, newId, page } from './pagination.js';
import { assignRole, deleteRole, getRole, insertRole, listRoles, unassignRole, updateRole, userRoles, type Role } from './repo/roles.js';
import { lockUser } from './repo/users.js';
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
    {
      method: 'GET', path: '/api/admin/roles', iface: 'admin', querySchema: 'admin-role-list-query',
      doc: { summary: 'List roles, newest first', tags, permission: READ, responses: { 200: 'admin-role-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as { limit: number; cursor?: string; name?: string };
        const p = page(await listRoles(deps.sql, ctx.tenantId, { ...q, cursor: decodeCursor(q.cursor) }), q.limit);
        return { body: { items: p.items.map(roleView), cursor: p.next } };
      },
    },
    {
      method: 'POST', path: '/api/admin/roles', iface: 'admin', body: 'json', bodySchema: 'admin-role-create',
      doc: { summary: 'Create a role (admin permissions only up to the caller\'s own)', tags, permission: WRITE, responses: { 201: 'admin-role' }, errors: [401, 403, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { name: string; description?: string | null; permissions: string[] };
        assertGrantable(ctx, b.permissions);
        const r = await audited(deps, ctx, req, { action: 'role.create', resourceType: 'role' }, async (tx) => {
          const role = await insertRole(tx, ctx.tenantId, newId('role'), b);
          if (!role) throw nameTaken();
          return { result: role, resourceId: role.id, after: roleView(role) };
        });
        return { status: 201, body: roleView(r) };
      },
    },
    {
      method: 'GET', path: '/api/admin/roles/:id', iface: 'admin',
      doc: { summary: 'Get a role', tags, permission: READ, responses: { 200: 'admin-role' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const r = await getRole(deps.sql, ctx.tenantId, req.params.id!);
        if (!r) throw roleNotFound();
        return { body: roleView(r) };
      },
    },
    {
      method: 'PUT', path: '/api/admin/roles/:id', iface: 'admin', body: 'json', bodySchema: 'admin-role-update',
      doc: { summary: 'Update a role: the fields given replace the stored ones', tags, permission: WRITE, responses: { 200: 'admin-role' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { name?: string; description?: string | null; permissions?: string[] };
        if (b.permissions) assertGrantable(ctx, b.permissions);
        const id = req.params.id!;
        const r = await audited(deps, ctx, req, { action: 'role.update', resourceType: 'role', resourceId: id }, async (tx) => {
          const cur = await getRole(tx, ctx.tenantId, id);
          if (!cur) throw roleNotFound();
          const next = await updateRole(tx, ctx.tenantId, id, b);
          if (next === 'name_taken') throw nameTaken();
          if (!next) throw roleNotFound();
          return { result: next, before: roleView(cur), after: roleView(next) };
        });
        return { body: roleView(r) };
      },
    },
    {
      method: 'DELETE', path: '/api/admin/roles/:id', iface: 'admin',
      doc: { summary: 'Delete a role and its assignments', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        await audited(deps, ctx, req, { action: 'role.delete', resourceType: 'role', resourceId: id, severity: 'warn' }, async (tx) => {
          const gone = await deleteRole(tx, ctx.tenantId, id);
          if (!gone) throw roleNotFound();
          return { result: null, before: roleView(gone) };
        });
        return { status: 204 };
      },
    },
    {
      method: 'GET', path: '/api/admin/users/:id/roles', iface: 'admin',
      doc: { summary: 'Roles assigned to a user', tags, permission: READ, responses: { 200: 'admin-user-roles' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const u = await getUser(deps.sql, ctx.tenantId, req.params.id!);
        if (!u) throw userNotFound();
        const roles = await userRoles(deps.sql, ctx.tenantId, u.id);
        return { body: { user_id: u.id, roles: roles.map((r) => ({ ...r, assigned_at: Number(r.assigned_at) })) } };
      },
    },
    {
      method: 'POST', path: '/api/admin/users/:id/roles', iface: 'admin', body: 'json', bodySchema: 'admin-role-assign',
      doc: { summary: 'Assign a role to a user (role.assigned; 409 role_already_assigned)', tags, permission: WRITE, responses: { 201: 'admin-role-assignment' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const userId = req.params.id!;
        const roleId = (req.data as { role_id: string }).role_id;
        const out = await audited(deps, ctx, req, { action: 'role.assign', resourceType: 'user', resourceId: userId }, async (tx) => {
          if (!(await lockUser(tx, ctx.tenantId, userId))) throw userNotFound();
          const role = await getRole(tx, ctx.tenantId, roleId);
          if (!role) throw roleNotFound();
          // Assigning a role hands out its permissions: the same no-escalation rule as granting them.
          assertGrantable(ctx, role.permissions);
          const a = await assignRole(tx, ctx.tenantId, userId, roleId, ctx.actor.id);
          if (!a) throw new Conflict('role_already_assigned', 'The user already has this role.');
          await recordEvent(tx, { tenantId: ctx.tenantId, event: 'role.assigned', data: { user_id: userId, role_id: role.id, role: role.name } });
          const result = { user_id: userId, role_id: role.id, role: role.name, assigned_at: Number(a.assigned_at), assigned_by: ctx.actor.id };
          return { result, after: result, metadata: { role_id: role.id } };
        });
        return { status: 201, body: out };
      },
    },
    {
      method: 'DELETE', path: '/api/admin/users/:id/roles/:roleId', iface: 'admin',
      doc: { summary: 'Unassign a role from a user (role.unassigned)', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const userId = req.params.id!;
        const roleId = req.params.roleId!;
        await audited(deps, ctx, req, { action: 'role.unassign', resourceType: 'user', resourceId: userId }, async (tx) => {
          if (!(await lockUser(tx, ctx.tenantId, userId))) throw userNotFound();
          const role = await getRole(tx, ctx.tenantId, roleId);
          if (!role) throw roleNotFound();
          if (!(await unassignRole(tx, ctx.tenantId, userId, roleId))) throw new NotFound('role_not_found', 'The user does not have this role.');
          await recordEvent(tx, { tenantId: ctx.tenantId, event: 'role.unassigned', data: { user_id: userId, role_id: role.id, role: role.name } });
          return { result: null, before: { user_id: userId, role_id: role.id, role: role.name }, metadata: { role_id: role.id } };
        });
        return { status: 204 };
      },
    },
  ];
}
