import { Queue, Worker } from 'bullmq';
import type { Deps } from '../deps.js';
import type { AuditActor } from '../store/audit-log.js';
import { approvalsDueForExpiry } from '../store/approvals.js';
import { closeRedis, createRedis } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';
import { settle } from './service.js';

export const ELEVATION_SWEEP_QUEUE = 'elevation-sweep';
const SCHEDULER_ID = 'elevation-expiry';
const SWEEPER: AuditActor = { type: 'machine', id: 'system:elevation-sweep', displayName: 'Elevation expiry sweep', email: null };

/**
 * Moves every request, step and grant past its expires_at to expired (reads already treat them so),
 * revoking the tokens of each grant that ends, with its security.alert event and an audit entry, one
 * transaction per request. Returns how many requests it settled.
 */
export async function sweepExpiredApprovals(deps: Pick<Deps, 'sql' | 'store' | 'tokens'>, now = Date.now()): Promise<number> {
  let n = 0;
  for (const due of await approvalsDueForExpiry(deps.sql, now)) {
    await deps.store.transaction(due.tenant_id, async (store, tx) => {
      const r = await store.approvals.getRequest(due.id, { lock: true });
      if (!r) return;
      const before = r.status;
      const s = await settle(deps, tx, store, r, { type: SWEEPER.type, id: SWEEPER.id }, now);
      if (!s.changed) return;
      await store.auditLog.record(SWEEPER, {
        action: 'approval_request.expire', resourceType: 'approval_request', resourceId: r.id, severity: 'info',
        metadata: { grants: s.grants.map((g) => ({ id: g.id, status: g.status })) }, before: { status: before }, after: { status: s.status },
      });
      n++;
    });
  }
  return n;
}

/**
 * The sweep as a BullMQ repeatable job: every HTTP process upserts the same job scheduler (so the
 * cluster runs one sweep per interval, whichever process picks it up) and runs a consumer with
 * concurrency 1. Registered on the lifecycle; nothing runs before start().
 */
export function createElevationSweeper(deps: Deps): { start(): Promise<void>; close(): Promise<void> } {
  let queue: Queue | undefined;
  let worker: Worker | undefined;
  let conns: Array<ReturnType<typeof createRedis>> = [];
  return {
    async start() {
      const producer = createRedis(deps.config, 'producer');
      const consumer = createRedis(deps.config, 'worker');
      conns = [producer, consumer];
      const prefix = queuePrefix(deps.config);
      queue = new Queue(ELEVATION_SWEEP_QUEUE, { connection: producer, prefix });
      queue.on('error', () => {});
      worker = new Worker(ELEVATION_SWEEP_QUEUE, async () => sweepExpiredApprovals(deps), { connection: consumer, prefix, concurrency: 1 });
      worker.on('error', (err) => deps.log.warn({ err: err.message }, 'elevation sweep worker error'));
      worker.on('failed', (_job, err) => deps.log.warn({ err: err.message }, 'elevation sweep failed'));
      await queue.upsertJobScheduler(SCHEDULER_ID, { every: deps.config.elevationSweepMs }, { name: 'sweep', opts: { removeOnComplete: true, removeOnFail: { age: 3600 } } })
        .catch((err: Error) => deps.log.warn({ err: err.message }, 'elevation sweep not scheduled'));
    },
    async close() {
      await worker?.close().catch(() => {});
      await queue?.close().catch(() => {});
      await Promise.all(conns.map((c) => closeRedis(c)));
      conns = [];
    },
  };
}
