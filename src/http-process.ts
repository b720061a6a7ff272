import { startTracing } from './tracing/start.js';
import { buildRouter } from './app.js';
import type { Config } from './config.js';
import { finishStaleMoves } from './pii/moves.js';
import { PiiVault } from './pii/vault.js';
import type { Deps } from './deps.js';
import { HttpServer } from './http/server.js';
import { JobQueues } from './jobs/queues.js';
import { createLifecycle, type Lifecycle } from './lifecycle.js';
import { createLogPipeline } from './logging/wiring.js';
import { createLogger, type Logger } from './log.js';
import { createTokenServices } from './services.js';
import { closeRedis, createRedis, redisReady } from './store/redis.js';
import { Store } from './store/index.js';
import { ReadReplica } from './store/replica.js';
import { createSql } from './sql.js';
import { configureFieldSealing } from './sealed-fields.js';
import { followLookupKeys } from './pii/lookup-keys/wiring.js';
import { TrustedProxies } from './http/client-address.js';
import { trackRevocationState } from './metrics.js';

export interface RunningHttp {
  port: number;
  deps: Deps;
  server: HttpServer;
  lifecycle: Lifecycle;
  /** Drains in-flight requests, then closes every resource the lifecycle owns. Resolves true when nothing was cut off. */
  close(): Promise<boolean>;
}

/** Starts one HTTP process's server with its own storage clients. Used by cluster workers and tests. */
export async function startHttp(config: Config, log: Logger = createLogger(config.logLevel, { role: 'http' })): Promise<RunningHttp> {
  // Registered first, closed last: everything below may use the storage clients while it closes.
  const lifecycle = createLifecycle(log);
  // Tracing first (and closed last, exporting what is left): the clients below are traced when it is on.
  if (config.tracing) lifecycle.add('tracing', startTracing(config.tracing, 'http'));
  const sql = createSql(config);
  configureFieldSealing(config.keyEncryptionKey);
  lifecycle.add('postgres', { close: () => sql.end({ timeout: 5 }) });
  const redis = createRedis(config, 'cache');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis error'));
  lifecycle.add('redis', { close: () => closeRedis(redis) });
  // Give Redis a moment to connect so the process is ready when it starts listening; an outage is
  // not fatal (requests that need Redis fail closed and /readyz reports it).
  await redisReady(redis, 3000).catch(() => log.warn('redis not reachable at start; continuing'));
  let deps: Deps;
  let server: HttpServer;
  try {
    const tokens = await createTokenServices(config, sql, redis, log, lifecycle);
    // svc_revocation_state_loaded: this process's check, as /readyz makes it, at scrape time.
    const untrackRevocations = trackRevocationState(() => tokens.revocations.loaded());
    lifecycle.add('revocation metric', { close: async () => untrackRevocations() });
    let replica: ReadReplica | undefined;
    if (config.databaseReadUrl) {
      const readSql = createSql({ databaseUrl: config.databaseReadUrl, databasePoolSize: config.databasePoolSize });
      lifecycle.add('postgres read replica', { close: () => readSql.end({ timeout: 5 }) });
      replica = new ReadReplica(readSql, sql, redis);
    }
    const pii = PiiVault.fromConfig(config, sql);
    // Partitions are created when missing; moves left by a crashed process are finished (not awaited by start).
    lifecycle.add('pii partitions', {
      start: async () => {
        await pii.partitions.ensure();
        void finishStaleMoves(sql, pii, 30_000).catch((err: Error) => log.warn({ err: err.message }, 'pii moves not finished; retried at next start'));
      },
      close: () => pii.close(),
    });
    // Users are indexed with the keys of the lookup-key rotation's current state (src/pii/lookup-keys/).
    followLookupKeys({ config, sql, redis, vault: pii, role: 'http', log, lifecycle });
    // One producer connection for every job this process adds (src/jobs/).
    const jobs = lifecycle.add('job queues', new JobQueues(config));
    deps = { config, log, sql, store: new Store(sql, pii, replica), redis, tokens, jobs, lifecycle };
    // Token decisions are buffered here and appended in batches; on only for tenants whose settings say so (cached).
    const logs = createLogPipeline(config, sql, log, (tenantId) => {
      const p = tokens.tenantSettings.get(tenantId);
      return p instanceof Promise ? p.then((x) => x.settings.token_decision_logging === true) : p.settings.token_decision_logging === true;
    });
    // Governance first: it closes after the pipeline, so the pipeline's last counts are flushed.
    deps.logGovernance = lifecycle.add('log governance', logs.governance);
    deps.logs = lifecycle.add('log pipeline', logs.pipeline);
    // Background work runs in the worker processes (src/jobs/table.ts); what this process holds open is
    // registered on deps.lifecycle by the module that owns it, never started by building routes.
    const router = buildRouter(deps);
    server = new HttpServer(router, {
      host: config.host, port: config.port, bodyLimitBytes: config.bodyLimitBytes,
      maxInflight: config.maxInflight, debugErrors: config.env === 'development', checkResponses: config.env === 'test',
      trustedProxies: new TrustedProxies(config.trustedProxies), log,
    });
    await lifecycle.start();
  } catch (err) {
    // A process that cannot start must not linger on its open connections.
    await lifecycle.close();
    throw err;
  }
  const port = await server.listen().catch(async (err: unknown) => { await lifecycle.close(); throw err; });
  let closing: Promise<boolean> | undefined;
  return {
    port, deps, server, lifecycle,
    close: () => (closing ??= (async () => {
      const drained = await server.drain(config.shutdownTimeoutMs);
      await lifecycle.close();
      return drained;
    })()),
  };
}
