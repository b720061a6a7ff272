import { PlatformSharding } from '../store/sharding.js';
import type { Sql } from '../sql.js';

export interface ShardGeneration { generation: number; shardCount: number }

/**
 * The current shard generation (global, and per-client overrides), cached in each process and
 * refreshed every few seconds so the hot path never waits on Postgres.
 */
export class ShardingCache {
  private global: ShardGeneration = { generation: 1, shardCount: 16 };
  private perClient = new Map<string, ShardGeneration>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sql: Sql, private readonly refreshMs = 5000) {}

  async load(): Promise<void> {
    const rows = await new PlatformSharding(this.sql).currentGenerations();
    const per = new Map<string, ShardGeneration>();
    for (const r of rows) {
      const g = { generation: r.generation, shardCount: r.shard_count };
      if (r.client_id === '') this.global = g; else per.set(r.client_id, g);
    }
    this.perClient = per;
  }

  start(onError: (err: unknown) => void): void {
    this.timer = setInterval(() => { this.load().catch(onError); }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void { clearInterval(this.timer); }

  current(clientId?: string): ShardGeneration {
    return (clientId !== undefined && this.perClient.get(clientId)) || this.global;
  }
}
