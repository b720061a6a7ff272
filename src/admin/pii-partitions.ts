import type { Deps } from '../deps.js';
import { Conflict, NotFound, ServiceUnavailable, ValidationError } from '../errors.js';
import type { SchemaTypes } from '../generated/types.js';
import type { Route } from '../http/types.js';
import { finishMove, pendingMove, type MoveIntent } from '../pii/moves.js';
import type { PartitionRule, PartitionSettings } from '../pii/residence.js';
import { listTenant } from './logging.js';
import { adminRoute, found } from './route.js';
import { userNotFound } from './users.js';

const READ = 'admin:settings:read';
const WRITE = 'admin:settings:write';
const tags = ['settings'];
const PATH = '/api/admin/settings/pii-partitions';

type SettingsBody = SchemaTypes['admin.pii-partition-settings-update'];

/**
 * PII partitions of a tenant (issue 14): where new users' personal data goes (settings), how many active
 * users each partition holds (the spec's stats), and moving one user between partitions.
 */
export function piiPartitionRoutes(deps: Deps): Route[] {
  const vault = deps.store.pii;
  const available = () => vault.partitions.names();
  const settingsView = (tenantId: string, s: PartitionSettings & { updated_at: number | null }) => ({
    tenant_id: tenantId, policy_partition: s.policy_partition, use_residence: s.use_residence, rules: s.rules,
    available_partitions: available(), updated_at: s.updated_at,
  });
  /** Partitions named by settings must exist on this server: 422 with the field that names an unknown one. */
  const checkPartitions = (b: SettingsBody): PartitionSettings => {
    const details: Record<string, string[]> = {};
    const known = new Set(available());
    if (b.policy_partition !== null && !known.has(b.policy_partition)) details.policy_partition = [`unknown partition; available: ${[...known].join(', ')}`];
    b.rules.forEach((r, i) => { if (!known.has(r.partition)) details[`rules/${i}/partition`] = [`unknown partition; available: ${[...known].join(', ')}`]; });
    if (Object.keys(details).length) throw new ValidationError(details);
    const rules: PartitionRule[] = b.rules.map((r) => ({ attribute: r.attribute, operator: r.operator, value: r.value, partition: r.partition, priority: r.priority ?? 100, enabled: r.enabled ?? true }));
    return { policy_partition: b.policy_partition, use_residence: b.use_residence, rules };
  };

  return [
    adminRoute(deps, {
      method: 'GET', path: PATH, permission: READ, tags, response: { 200: 'admin.pii-partition-settings' },
      summary: 'A tenant\'s PII partition settings: policy partition, declared residence, rules, available partitions',
      handler: async ({ ctx, store }) => ({ body: settingsView(ctx.tenantId, await store.piiSettings.get()) }),
    }),
    adminRoute(deps, {
      method: 'PUT', path: PATH, permission: WRITE, tags, body: 'admin.pii-partition-settings-update', response: { 200: 'admin.pii-partition-settings' },
      summary: 'Change where new users\' personal data goes (tenant policy, declared residence, rules by priority, default); unknown partitions are 422',
      audit: { action: 'settings.pii_partitions.update', resourceType: 'settings', severity: 'warn' },
      handler: async ({ ctx, body, mutate }) => {
        const next = checkPartitions(body);
        const saved = await mutate(async (_tx, store) => {
          const before = await store.piiSettings.get();
          const after = await store.piiSettings.put(next);
          return { result: after, before: settingsView(ctx.tenantId, before), after: settingsView(ctx.tenantId, after), resourceId: ctx.tenantId };
        });
        vault.forgetSettings(ctx.tenantId);
        return { body: settingsView(ctx.tenantId, saved) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${PATH}/stats`, permission: READ, tags, query: 'query.pii-partition-stats', response: { 200: 'admin.pii-partition-stats' }, errors: [404, 503],
      summary: 'Active users per PII partition (zero-filled for every available partition); tenant_id names another tenant (platform admins)',
      handler: async ({ deps, ctx, query }) => {
        const tenantId = listTenant(ctx, query);
        if (tenantId !== ctx.tenantId) {
          const [t] = await deps.sql`select 1 from tenants where id = ${tenantId}`;
          if (!t) throw new NotFound('not_found', 'No such tenant.');
        }
        const names = available();
        // A partition that does not answer is reported as such, never counted as empty.
        const down = (await Promise.all(names.map(async (n) => ((await vault.partitions.probe(n)) ? null : n)))).filter((n): n is string => n !== null);
        if (down.length) throw new ServiceUnavailable(`PII partition${down.length > 1 ? 's' : ''} ${down.join(', ')} cannot be read; statistics would be incomplete.`, 5);
        const counts = await deps.store.forTenant(tenantId).piiSettings.activeCounts();
        const byPartition: Record<string, number> = {};
        for (const n of names) byPartition[n] = 0;
        let total = 0;
        for (const [n, c] of counts) { byPartition[n] = c; total += c; }
        return { body: { total, byPartition, availablePartitions: names, tenantId, note: 'Counts of active users by the partition holding their personal data; suspended and locked users are not counted.' } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/users/:id/pii-partition', permission: 'admin:users:write', tags: ['users'], body: 'admin.user-pii-move',
      response: { 200: 'admin.user-pii-moved' }, errors: [404, 409, 503],
      summary: 'Move a user\'s personal data to another partition (copy, switch, delete; finished after a crash)',
      audit: { action: 'user.pii_partition.move', resourceType: 'user', severity: 'warn' },
      handler: async ({ deps, ctx, params, body, mutate }) => {
        const id = params.id!;
        if (!vault.partitions.has(body.partition)) throw new ValidationError({ partition: [`unknown partition; available: ${available().join(', ')}`] });
        // A move left by a crash is finished first, so the new one starts from where the data really is.
        const left = await pendingMove(deps.sql, ctx.tenantId, id);
        if (left) await finishMove(deps.sql, vault, left);
        const intent = await mutate(async (tx, store) => {
          const u = found(await store.users.lock(id), userNotFound);
          const m: MoveIntent = { tenant_id: ctx.tenantId, user_id: id, from_partition: u.pii_partition, to_partition: body.partition, step: 'copy' };
          if (u.pii_partition !== body.partition) {
            const [ok] = await tx`insert into pii_moves (tenant_id, user_id, from_partition, to_partition) values (${m.tenant_id}, ${id}, ${m.from_partition}, ${m.to_partition})
              on conflict do nothing returning 1`;
            if (!ok) throw new Conflict('conflict', 'A move of this user is in progress.');
          }
          return { result: m, before: { pii_partition: u.pii_partition }, after: { pii_partition: body.partition }, resourceId: id };
        });
        const moved = intent.from_partition !== intent.to_partition;
        if (moved) await finishMove(deps.sql, vault, intent);
        return { body: { user_id: id, from_partition: intent.from_partition, partition: intent.to_partition, moved } };
      },
    }),
  ];
}
