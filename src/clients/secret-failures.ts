import type { Redis } from 'ioredis';
import { declareEvents } from '../events/declare.js';
import type { Logger } from '../log.js';
import type { Sql } from '../sql.js';
import { redisKeys } from '../store/redis-keys.js';
import type { Client } from './model.js';

/** Wrong secrets of one client from many addresses are a security alert. */
const clientAuthEvents = declareEvents(['security.alert']);

/**
 * Wrong client secrets are budgeted per client id AND source address (docs/decisions.md "Client secret
 * failures"): secrets are 256-bit server-generated values, so guessing is not the threat; a lockout
 * anyone could trigger for everyone is. One address past its budget is refused (429) for the rest of the
 * window, even with the right secret; every other address keeps authenticating. Nothing is refused per
 * client id alone: many failing addresses only raise a `security.alert`.
 */

/** Wrong secrets allowed per client id and source address in 10 minutes (every process, Redis). */
export const CLIENT_SECRET_FAILURES = { limit: 20, windowMs: 600_000 };

/** Distinct failing addresses of one client id within the window that raise one `security.alert`; at most one per window. */
export const MANY_SOURCES = { sources: 10, windowMs: 600_000 };

/** The client id as it appears in a key: bounded, and without the braces that would change its hash tag. */
const keyId = (clientId: string): string => clientId.slice(0, 200).replace(/[{}%]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);

/** The Redis key of one (client id, address) failure budget (read alongside a request's other keys: see read-ahead). */
export const failureBudgetKey = (clientId: string, address: string): string => redisKeys.clientAuthFail(keyId(clientId), address || 'unknown');

// Counts the failure against its (client, address) budget, adds the address to the client's failing
// sources (a HyperLogLog: bounded memory however many addresses fail), and claims the window's alert
// when the sources reach the threshold. Returns the sources counted when this call claimed the alert, else 0.
// The three keys share the client's hash tag (one slot on a Redis Cluster).
const RECORD = `local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
redis.call('PFADD', KEYS[2], ARGV[2])
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
local sources = redis.call('PFCOUNT', KEYS[2])
if sources >= tonumber(ARGV[4]) and redis.call('SET', KEYS[3], '1', 'PX', ARGV[3], 'NX') then return sources end
return 0`;

/**
 * Records one wrong secret from `address` for `clientId`, and when the client has now failed from
 * MANY_SOURCES.sources addresses in the window, writes the window's `security.alert` to the outbox of
 * the client's tenant (only for a client that exists: an unknown id has no tenant to tell). A failure
 * to record is swallowed: the request is answered 401 regardless.
 */
export async function recordSecretFailure(ctx: { redis: Redis; sql: Sql; log?: Logger }, clientId: string, address: string, client: Client | null): Promise<void> {
  const id = keyId(clientId);
  let sources: number;
  try {
    sources = Number(await ctx.redis.eval(RECORD, 3, failureBudgetKey(clientId, address), redisKeys.clientAuthFailSources(id), redisKeys.clientAuthFailAlerted(id),
      String(CLIENT_SECRET_FAILURES.windowMs), address || 'unknown', String(MANY_SOURCES.windowMs), String(MANY_SOURCES.sources)));
  } catch { return; }
  if (sources === 0 || client === null) return;
  ctx.log?.warn({ client_id: client.clientId, tenant: client.tenantId, sources }, 'client secret failures from many addresses');
  try {
    await ctx.sql.begin((tx) => clientAuthEvents.emit(tx, client.tenantId, 'security.alert', { client_id: client.clientId, reason: 'client_secret_failures_many_sources', sources, window_seconds: MANY_SOURCES.windowMs / 1000 }));
  } catch (err) {
    // Not written: give the claim back so a later failure in the window raises it.
    await ctx.redis.del(redisKeys.clientAuthFailAlerted(id)).catch(() => {});
    ctx.log?.error({ err, client_id: client.clientId }, 'security.alert for client secret failures not recorded');
  }
}
