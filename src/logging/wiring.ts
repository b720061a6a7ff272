import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/sql.js';
import { LogPipeline, type TokenLoggingLookup } from './pipeline.js';
import type { LogAdmission, UsageMeter } from './types.js';

/**
 * The one place the pipeline's governance seams are chosen. Until usage metering and quota enforcement
 * land (issue 13 items 4 and 5, branch w13b), every record is admitted and nothing is metered:
 * w13b REPLACES these two with its Redis-backed meter and its policy-driven admission.
 */
export function governance(_config: Config, _log: Logger): { admission: LogAdmission; meter: UsageMeter; close(): Promise<void> } {
  const admission: LogAdmission = { admit: () => true };
  const meter: UsageMeter = { count: () => {} };
  return { admission, meter, close: async () => {} };
}

/** The log pipeline of a process, with the governance above. */
export function createLogPipeline(config: Config, sql: Sql, log: Logger, tokenLogging: TokenLoggingLookup): { pipeline: LogPipeline; governance: ReturnType<typeof governance> } {
  const g = governance(config, log);
  const pipeline = new LogPipeline(sql, g.admission, g.meter, log, { flushMs: config.logFlushMs, bufferMax: config.logBufferMax, tokenLogging });
  return { pipeline, governance: g };
}
