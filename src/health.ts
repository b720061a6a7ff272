import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { ServiceUnavailable } from './errors.js';
import type { Deps } from './deps.js';
import type { Route } from './http/types.js';
import { registry } from './metrics.js';

/** Liveness, readiness and Prometheus metrics. */
export function healthRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: '/healthz', iface: 'public',
      doc: { summary: 'Process is alive', tags: ['operations'], security: 'none' },
      handler: () => ({ body: { status: 'ok' } }),
    },
    {
      method: 'GET', path: '/readyz', iface: 'public',
      doc: { summary: 'Postgres and Redis are reachable, the current signing key is usable and the revocation state is loaded', tags: ['operations'], security: 'none', errors: [503] },
      handler: async () => {
        const [pg, rd] = await Promise.all([checkPostgres(deps), checkRedis(deps)]);
        if (!pg || !rd) {
          throw new ServiceUnavailable(`not ready: postgres ${pg ? 'ok' : 'unreachable'}, redis ${rd ? 'ok' : 'unreachable'}`);
        }
        // A process that cannot use the current signing key (a rotation under another KEY_ENCRYPTION_KEY)
        // refuses every issuance: not ready, and the reason is the fix.
        const keys = deps.tokens.keys.problem();
        if (keys) throw new ServiceUnavailable(`not ready: ${keys}`);
        // A process whose Redis lost the revocation record would refuse every token: not ready until refilled.
        if (!(await checkRevocations(deps))) throw new ServiceUnavailable('not ready: revocation state not loaded into redis yet');
        return { body: { status: 'ready', postgres: 'ok', redis: 'ok' } };
      },
    },
    {
      method: 'GET', path: '/metrics', iface: 'public',
      doc: { summary: 'Prometheus metrics, aggregated across every cluster process (docs/operations.md "Metrics")', tags: ['operations'], security: 'none' },
      handler: async () => ({ type: registry.contentType, body: await clusterMetrics() }),
    },
  ];
}

async function checkPostgres({ sql }: Deps): Promise<boolean> {
  try {
    await withTimeout(sql`select 1`, 2000);
    return true;
  } catch {
    return false;
  }
}

async function checkRedis({ redis }: Deps): Promise<boolean> {
  try {
    return (await withTimeout(redis.ping(), 2000)) === 'PONG';
  } catch {
    return false;
  }
}

async function checkRevocations({ tokens }: Deps): Promise<boolean> {
  try {
    return await withTimeout(tokens.revocations.loaded(), 2000);
  } catch {
    return false;
  }
}

function withTimeout<T>(p: PromiseLike<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    Promise.resolve(p).then((v) => { clearTimeout(t); resolve(v); }, (e) => { clearTimeout(t); reject(e); });
  });
}

const pending = new Map<string, (text: string) => void>();
if (cluster.isWorker) {
  process.on('message', (msg: { type?: string; id?: string; text?: string }) => {
    if (msg?.type === 'svc:metrics:res' && msg.id) {
      pending.get(msg.id)?.(msg.text ?? '');
      pending.delete(msg.id);
    }
  });
}

/** In a cluster the primary gathers every worker's registry; alone, this process's own. */
export async function clusterMetrics(): Promise<string> {
  if (!cluster.isWorker || !process.send) return registry.metrics();
  const id = randomUUID();
  return withTimeout(new Promise<string>((resolve) => {
    pending.set(id, resolve);
    process.send!({ type: 'svc:metrics:get', id });
  }), 3000).catch(() => { pending.delete(id); return registry.metrics(); });
}
