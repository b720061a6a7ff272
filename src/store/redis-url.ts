/**
 * The forms a Redis address may take (REDIS_URL, QUEUE_REDIS_URL):
 * - one server: `redis://[user:password@]host:port[/db]` or `rediss://...` (TLS);
 * - a Redis Cluster: `redis+cluster://[user:password@]host:port,host:port,...` or `rediss+cluster://...`.
 *   The nodes listed are only where the client starts; it learns every master and replica from them
 *   (CLUSTER SLOTS), so two or three of them are enough. A cluster has no database number.
 * REDIS_CLUSTER_NODES=host:port,host:port is the same as REDIS_URL=redis+cluster://host:port,host:port.
 * No imports: src/config.ts validates with it.
 */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: Array<{ host: string; port: number }>; username?: string; password?: string; tls: boolean };

const CLUSTER_RE = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;

/** Parses a Redis address; throws an Error naming what is wrong. */
export function parseRedisTarget(value: string): RedisTarget {
  const m = CLUSTER_RE.exec(value);
  if (!m) {
    let u: URL;
    try { u = new URL(value); } catch { throw new Error('is not a valid URL'); }
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`must use redis:, rediss:, redis+cluster: or rediss+cluster:, got "${u.protocol}"`);
    return { kind: 'single', url: value };
  }
  const nodes = m[3]!.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    const host = i > 0 ? hp.slice(0, i).replace(/^\[|\]$/g, '') : '';
    const port = Number(hp.slice(i + 1));
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`cluster node "${hp}" is not host:port`);
    return { host, port };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (m[2] !== undefined) {
    const j = m[2].indexOf(':');
    username = decodeURIComponent(j < 0 ? m[2] : m[2].slice(0, j)) || undefined;
    password = j < 0 ? undefined : decodeURIComponent(m[2].slice(j + 1));
  }
  return { kind: 'cluster', nodes, username, password, tls: m[1] === 'rediss' };
}

/** REDIS_CLUSTER_NODES (host:port,host:port) as the address form above. */
export function clusterUrl(nodes: string): string {
  return `redis+cluster://${nodes.split(',').map((s) => s.trim()).filter(Boolean).join(',')}`;
}
