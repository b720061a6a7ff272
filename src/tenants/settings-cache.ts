import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';
import type { Logger } from '../log.js';
import { NotifiedCache } from '../notified-cache.js';
import type { Sql } from '../sql.js';
import { REFUSED_STATUSES, TenantRepository, type TenantStatus } from '../store/tenants.js';
import type { AdminTenantSettings } from '../generated/types.js';

/** What the hot paths read of a tenant: its settings, login page name and status. */
export interface TenantProfile { settings: AdminTenantSettings; displayName: string | null; status: TenantStatus | null; platform: boolean }

const EMPTY: TenantProfile = { settings: {}, displayName: null, status: null, platform: false };

/**
 * Tenant settings cached in each process, so /token and /introspect cost no Postgres query for them.
 * A change is announced on a Redis channel and evicts the entry in every process at once; the TTL
 * (30 s) bounds staleness if a notice is missed.
 */
export class TenantSettingsCache extends NotifiedCache<TenantProfile> {
  constructor(sql: Sql, pub: Redis, channel: string, log: Logger) {
    super({
      name: 'tenant settings', ttlMs: 30_000, channel, pub, log,
      load: async (tenantId) => {
        const t = await new TenantRepository(sql, tenantId).get();
        return t ? { settings: t.settings as AdminTenantSettings, displayName: t.display_name, status: t.status, platform: t.platform === true } : EMPTY;
      },
    });
  }
}

/**
 * Access token lifetime: the tenant's `access_token_ttl` (itself bounded by the server's) is the default
 * when the client sets none, and a ceiling over the client's own.
 */
export function accessTtl(serverTtl: number, clientTtl: number | null | undefined, s: AdminTenantSettings): number {
  const tenant = s.access_token_ttl === undefined ? undefined : Math.min(s.access_token_ttl, serverTtl);
  return Math.min(clientTtl ?? tenant ?? serverTtl, tenant ?? Infinity);
}

/** Refresh token lifetime, by the same rule. */
export function refreshTtl(serverTtl: number, clientTtl: number | null | undefined, s: AdminTenantSettings): number {
  const tenant = s.refresh_token_ttl === undefined ? undefined : Math.min(s.refresh_token_ttl, serverTtl);
  return Math.min(clientTtl ?? tenant ?? serverTtl, tenant ?? Infinity);
}

/** Refuses a sign-in method the tenant has not enabled (all are, when `login_methods` is absent). */
export async function assertLoginMethod(cache: TenantSettingsCache, tenantId: string, method: 'email_code' | 'passkey'): Promise<AdminTenantSettings> {
  const { settings } = await cache.get(tenantId);
  if (settings.login_methods && !(settings.login_methods as string[]).includes(method)) {
    throw new AppError(403, 'forbidden', `${method === 'passkey' ? 'Passkey' : 'Email code'} sign-in is disabled for this organization.`);
  }
  return settings;
}

/**
 * Refuses a request of a suspended (or deleting) tenant, from the cached status: the check API and the
 * token endpoint read it with no query (a suspend evicts the entry everywhere by pub/sub).
 */
export async function tenantServing(cache: TenantSettingsCache, tenantId: string): Promise<boolean> {
  return servingStatus((await cache.get(tenantId)).status);
}

/** Whether a tenant of this (cached) status is served. */
export function servingStatus(status: TenantStatus | null): boolean {
  return status === null || !REFUSED_STATUSES.has(status);
}
