import type { Redis } from 'ioredis';
import type { ComponentAck } from './states.js';

/**
 * Where every process following the control plane reports what it applies (a Redis hash, field per
 * process, under the deployment's key prefix). A report is a heartbeat: it is rewritten at every refresh.
 */
export const FLEET_KEY = 'lookup-hmac:fleet';

/** Reports of live processes (reported within liveMs); older ones are removed once they are well past it. */
export async function liveComponents(redis: Redis, liveMs: number, now = Date.now()): Promise<ComponentAck[]> {
  const all = await redis.hgetall(FLEET_KEY);
  const live: ComponentAck[] = [];
  const gone: string[] = [];
  for (const [id, raw] of Object.entries(all)) {
    let a: ComponentAck;
    try { a = JSON.parse(raw) as ComponentAck; } catch { gone.push(id); continue; }
    if (now - a.at <= liveMs) live.push({ ...a, id });
    else if (now - a.at > 10 * liveMs) gone.push(id);
  }
  if (gone.length) await redis.hdel(FLEET_KEY, ...gone).catch(() => {});
  return live.sort((x, y) => x.id.localeCompare(y.id));
}
