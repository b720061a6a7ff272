/**
 * The shape every log record takes on its way to the archive, and the two seams between the pipeline
 * (records → chunks → destinations) and governance (usage metering, quota enforcement). Kept apart so
 * the hot path depends only on these synchronous interfaces, never on how they are stored.
 */
export const LOG_TYPES = ['admin_audit', 'security', 'auth', 'token', 'webhook_delivery'] as const;
export type LogType = (typeof LOG_TYPES)[number];

export const PLANES = ['control', 'data'] as const;
export type Plane = (typeof PLANES)[number];

/** critical records are never dropped; bulk (token decisions) is off unless the tenant's policy turns it on. */
export const LANES = ['critical', 'default', 'bulk'] as const;
export type Lane = (typeof LANES)[number];

export interface LogRecord {
  readonly tenantId: string;
  readonly logType: LogType;
  readonly plane: Plane;
  readonly lane: Lane;
  /** epoch ms */
  readonly ts: number;
  readonly body: Record<string, unknown>;
}

export const USAGE_METRICS = ['records', 'bytes', 'chunks', 'dropped_records'] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/**
 * Whether the tenant's quota enforcement admits a record now. Synchronous and free of I/O: it answers
 * from state the process refreshes in the background. Critical records are always admitted.
 */
export interface LogAdmission {
  admit(tenantId: string, logType: LogType, plane: Plane, lane: Lane): boolean;
}

/** Counts usage in process memory; flushed to shared counters in batches, never per call. */
export interface UsageMeter {
  count(tenantId: string, logType: LogType, plane: Plane, lane: Lane, metric: UsageMetric, n: number): void;
}
