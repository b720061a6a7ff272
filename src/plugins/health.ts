import type { Redis } from 'ioredis';
import { redisKeys } from '../store/redis-keys.js';
import { PLUGINS, type CheckEnv, type CheckResult, type HealthStatus } from './registry.js';

export interface Health { status: HealthStatus | 'unknown'; timestamp: number; message: string }

const CHECK_TIMEOUT_MS = 10_000;

async function bounded(p: Promise<CheckResult>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => { timer = setTimeout(() => resolve({ status: 'unhealthy', message: 'health check timed out' }), CHECK_TIMEOUT_MS); });
  try { return await Promise.race([p.catch(() => ({ status: 'unhealthy' as const, message: 'health check failed' })), late]); } finally { clearTimeout(timer); }
}

/** Runs every plugin's check and caches each result for `ttlMs` (a result older than that is no longer trusted). */
export async function runHealthChecks(env: CheckEnv, cache: Redis, ttlMs: number): Promise<Record<string, Health>> {
  const out: Record<string, Health> = {};
  await Promise.all(PLUGINS.map(async (p) => {
    const r = await bounded(p.check(env));
    const h: Health = { ...r, timestamp: Date.now() };
    out[p.id] = h;
    await cache.set(redisKeys.pluginHealth(p.id), JSON.stringify(h), 'PX', ttlMs);
  }));
  return out;
}

/** The cached health of a plugin; `unknown` when no check ran within the TTL. */
export async function readHealth(cache: Redis, pluginId: string): Promise<Health> {
  const raw = await cache.get(redisKeys.pluginHealth(pluginId));
  if (!raw) return { status: 'unknown', timestamp: Date.now(), message: 'no recent health check' };
  return JSON.parse(raw) as Health;
}

/** Results older than three check intervals are unknown. */
export const healthTtlMs = (intervalMs: number) => intervalMs * 3;
