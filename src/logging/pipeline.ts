import type { Logger } from '../log.js';
import { insertLogRecords } from '../store/log-archive.js';
import type { TenantTombstones } from '../tenants/fence.js';
import type { Db, Sql } from '../sql.js';
import type { LogAdmission, LogRecord, UsageMeter } from './types.js';

/** Whether a tenant's logging policy turns token decisions on: a value when known in process memory, else a promise. */
export type TokenLoggingLookup = (tenantId: string) => boolean | Promise<boolean>;

export interface PipelineOptions {
  flushMs: number; bufferMax: number; tokenLogging: TokenLoggingLookup;
  /** Tombstoned tenants: nothing is buffered for them, and what was buffered before is dropped at the flush. */
  fence?: TenantTombstones;
}

const bytesOf = (r: LogRecord) => Buffer.byteLength(JSON.stringify(r.body));

/**
 * The per-process log buffer. `append` is synchronous and does no I/O: the record is admitted (quota
 * enforcement), metered and buffered; a timer appends the buffer to `log_records` in one statement
 * every LOG_FLUSH_MS (or at once when LOG_BUFFER_MAX records wait). A lifecycle resource: closing it
 * appends what is left.
 */
export class LogPipeline {
  private buffer: LogRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly sql: Sql, private readonly admission: LogAdmission, private readonly meter: UsageMeter,
    private readonly log: Logger, private readonly opts: PipelineOptions) {}

  start(): void {
    this.timer = setInterval(() => { void this.flush(); }, this.opts.flushMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Admits, meters and buffers one record (none for a tombstoned tenant). */
  append(r: LogRecord): void {
    if (this.opts.fence?.has(r.tenantId)) return;
    if (r.lane !== 'critical' && !this.admission.admit(r.tenantId, r.logType, r.plane, r.lane)) {
      this.meter.count(r.tenantId, r.logType, r.plane, r.lane, 'dropped_records', 1);
      return;
    }
    this.meter.count(r.tenantId, r.logType, r.plane, r.lane, 'records', 1);
    this.meter.count(r.tenantId, r.logType, r.plane, r.lane, 'bytes', bytesOf(r));
    this.buffer.push(r);
    if (this.buffer.length >= this.opts.bufferMax) void this.flush();
  }

  /** A token decision (issuance, introspection, revocation): a bulk record, only when the tenant's policy turns them on. */
  tokenDecision(tenantId: string, body: Record<string, unknown>): void {
    const ts = Date.now();
    const rec = (): LogRecord => ({ tenantId, logType: 'token', plane: 'data', lane: 'bulk', ts, body });
    const on = this.opts.tokenLogging(tenantId);
    if (on === true) this.append(rec());
    else if (on !== false) void on.then((yes) => { if (yes) this.append(rec()); }, () => {});
  }

  /**
   * Appends the buffer in one statement; a failed append keeps the records for the next try. Records of
   * a tenant tombstoned since they were buffered are dropped: here when this process knows it, else by
   * the statement itself (it inserts only records of tenants not tombstoned).
   */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    const fence = this.opts.fence;
    if (fence) this.buffer = this.buffer.filter((r) => !fence.has(r.tenantId));
    if (!this.buffer.length) return Promise.resolve();
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = insertLogRecords(this.sql, batch, true, { liveTenantsOnly: true }).catch((err: Error) => {
      this.log.warn({ err: err.message, records: batch.length }, 'log records not appended; retrying');
      this.buffer = batch.concat(this.buffer);
      // Bound memory while the database is away: drop the oldest non-critical records beyond 10x the buffer.
      const limit = this.opts.bufferMax * 10;
      if (this.buffer.length > limit) {
        const kept: LogRecord[] = [];
        let excess = this.buffer.length - limit;
        for (const r of this.buffer) {
          if (excess > 0 && r.lane !== 'critical') { excess--; this.meter.count(r.tenantId, r.logType, r.plane, r.lane, 'dropped_records', 1); continue; }
          kept.push(r);
        }
        this.buffer = kept;
      }
    }).finally(() => { this.flushing = undefined; });
    return this.flushing;
  }
}

/**
 * Writes records inside the caller's business transaction (admin audit entries, auth and security
 * events, webhook delivery attempts): they exist if and only if the change committed. They are
 * admitted and metered by the log worker when it chunks them (`metered` false).
 */
export function recordLogsInTx(tx: Db, records: LogRecord[]): Promise<void> {
  return insertLogRecords(tx, records, false);
}
