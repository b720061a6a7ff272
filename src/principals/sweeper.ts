import { redisKeys } from '../store/redis-keys.js';
import type { Deps } from '../deps.js';
import { principalsWithCredentialEdges } from '../store/principals.js';
import { resyncPrincipal } from './service.js';

const LOCK = redisKeys.principalSweepLock;

export interface CredentialSweeper {
  /** Starts the interval timer (idempotent). */
  start(): void;
  /** Stops the timer and waits for a sweep under way to finish. */
  close(): Promise<void>;
}

/**
 * Credentials enter and leave their backing client's jwks at notBefore and expiresAt. Every interval one
 * HTTP process (Redis lock) re-syncs the principals whose credentials crossed such an edge recently and
 * announces the changed clients, so a key works from notBefore and stops at expiresAt within about one
 * interval. Nothing runs until start(); the process lifecycle owns start and close.
 */
export function createCredentialSweeper(deps: Pick<Deps, 'sql' | 'store' | 'redis' | 'tokens' | 'log'>, intervalMs = 5000): CredentialSweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const sweep = async () => {
    try {
      if ((await deps.redis.set(LOCK, String(process.pid), 'PX', intervalMs - 100, 'NX')) !== 'OK') return;
      const now = Date.now();
      for (const r of await principalsWithCredentialEdges(deps.sql, now - intervalMs * 3, now)) {
        const out = await resyncPrincipal(deps.store.forTenant(r.tenant_id).principals, r.principal_id);
        if (out) await deps.tokens.clients.changed(out.principal.client_id);
      }
    } catch (err) {
      deps.log.debug({ err }, 'principal credential sweep failed');
    }
  };
  const tick = () => {
    if (running) return;
    running = sweep().finally(() => { running = undefined; });
  };
  return {
    start() {
      if (timer) return;
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
