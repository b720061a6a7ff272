import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { Sql } from '../sql.js';
import { listTombstonedTenants } from '../store/tenants.js';

/** What a producer asks before writing for a tenant: synchronous, no I/O. */
export interface TenantTombstones { has(tenantId: string): boolean }

/**
 * The tombstoned tenants (`deleting`, `deleted`) as this process knows them, in memory, for producers
 * that must not do I/O per call (the usage meter, the log buffer). Loaded at start, reloaded every
 * `refreshMs`, and a tenant is looked up at once when a tenant change notice names it (the DELETE route
 * publishes one right after its commit). A tombstone is never lifted, so the set only grows. Writers to
 * Postgres do not rely on it alone: they check and lock in their own transaction (lockLiveTenants), and
 * the rollup and archive drop what a process that had not heard yet still wrote.
 */
export class TenantFence implements TenantTombstones {
  private readonly dead = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sql: Sql, private readonly log: Logger, private readonly refreshMs: number) {}

  has(tenantId: string): boolean { return this.dead.has(tenantId); }

  /** Reloads every tombstone (a missed notice is caught here). */
  async refresh(tenantId?: string): Promise<void> {
    try {
      for (const id of await listTombstonedTenants(this.sql, tenantId)) this.dead.add(id);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'tenant tombstones not refreshed');
    }
  }

  /** Listens for tenant change notices (the message is the tenant id) on a subscriber connection. */
  async subscribe(sub: Redis, channelName: string): Promise<void> {
    sub.on('message', (ch: string, tenantId: string) => { if (ch === channelName && !this.dead.has(tenantId)) void this.refresh(tenantId); });
    await sub.subscribe(channelName);
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => { void this.refresh(); }, this.refreshMs);
    this.timer.unref();
    await this.refresh();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
