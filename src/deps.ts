import type { Context } from '@opentelemetry/api';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { JobQueues } from './jobs/queues.js';
import type { Lifecycle } from './lifecycle.js';
import type { Logger } from './log.js';
import type { Governance } from './logging/wiring.js';
import type { LogPipeline } from './logging/pipeline.js';
import type { Store } from './store/index.js';
import type { Sql } from './sql.js';
import type { TokenServices } from './services.js';

/** What every module of an HTTP process is handed: created once at start, closed once at shutdown. */
export interface Deps {
  config: Config;
  log: Logger;
  sql: Sql;
  /** Repositories, bound to a tenant with store.forTenant(id). */
  store: Store;
  redis: Redis;
  tokens: TokenServices;
  /** The process's job producers (src/jobs/), over one shared queue connection. */
  jobs: JobQueues;
  /**
   * Owner of the process's connections, queues and timers: a module that opens one registers it here
   * (`deps.lifecycle.add(name, { start, close })`) and shutdown closes it.
   */
  lifecycle: Lifecycle;
  /** The process's log record buffer (src/logging/pipeline.ts); absent in processes that do not produce buffered records. */
  logs?: LogPipeline;
  /** The process's usage meter and quota admission (src/logging/wiring.ts). */
  logGovernance?: Governance;
  /**
   * Set only on a sampled request's view of these deps (src/request-deps.ts): its trace, for
   * the services that take it explicitly (signing pool, revocation reads, job adds).
   */
  trace?: Context;
}
