import type { ChildProcess } from 'node:child_process';
import { forkReady } from '../helpers/processes.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { startJobsWorker, type RunningJobsWorker } from '../../workers/jobs-worker.js';
import { adminOf } from '../admin/helpers.js';
import { startTestServer } from '../helpers/server.js';
import { userMapping } from '../field-mapping/fixtures.js';

const ENV = { USER_JOB_LOCK_MS: '2000', PLUGIN_HEALTH_INTERVAL_MS: '60000' };
const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/jobs-worker.js');

/** A server, an admin of a fresh tenant, and jobs workers in this process or in a child that can be killed. */
export async function importEnv(label: string) {
  const srv = await startTestServer(ENV);
  const admin = await adminOf(srv, ['admin:*'], label);
  const children = new Set<ChildProcess>();
  const workers = new Set<RunningJobsWorker>();
  t.teardown(async () => { for (const c of children) c.kill('SIGKILL'); for (const w of workers) await w.close(); await srv.close(); });
  return {
    srv, ...admin, sql: srv.deps.sql, users: srv.deps.store.forTenant(admin.tenantId).users,
    job: async (id: string) => (await admin.call('GET', `/api/admin/user-imports/${id}`)).body,
    async worker(): Promise<RunningJobsWorker> {
      const w = await startJobsWorker(srv.config, createLogger('silent'));
      workers.add(w);
      return { close: async () => { workers.delete(w); await w.close(); } };
    },
    child(): Promise<ChildProcess> {
      const c = srv.config;
      const env = { ...process.env, ...ENV, NODE_ENV: 'test', LOG_LEVEL: 'silent', REDIS_PREFIX: c.redisPrefix, DATABASE_URL: c.databaseUrl, REDIS_URL: c.redisUrl, QUEUE_REDIS_URL: c.queueRedisUrl };
      return forkReady(workerFile, env, children);
    },
  };
}

export const mapping = userMapping();
export const HEADER = 'E-Mail,First,Last,Phone,Verified,Team';

/**
 * `n` rows: every 400th has a bad email (rejected), every 100th (offset 50) lacks a name (a warning:
 * review); the rest are new users unless they were created beforehand.
 */
export function bigCsv(n: number): string {
  const lines = [HEADER];
  for (let i = 0; i < n; i++) {
    const email = i % 400 === 399 ? `broken-${i}` : `Bulk.${i}@Example.org`;
    const named = i % 100 !== 50;
    lines.push(`${email},${named ? `Person${i}` : ''},${named ? 'Bulk' : ''},,yes,red`);
  }
  return lines.join('\n') + '\n';
}
