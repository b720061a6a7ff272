import { buildRouter } from './app.js';
import type { Config } from './config.js';
import type { Deps } from './deps.js';
import { HttpServer } from './http/server.js';
import { createLogger, type Logger } from './log.js';
import { createCredentialSweeper } from './principals/sweeper.js';
import { createRedis, redisReady } from './store/redis.js';
import { Store } from './store/index.js';
import { createSql } from './store/sql.js';
import { createTokenServices } from './tokens/services.js';

export interface RunningHttp {
  port: number;
  deps: Deps;
  server: HttpServer;
  /** Drains in-flight requests, then closes every resource. Resolves true when nothing was cut off. */
  close(): Promise<boolean>;
}

/** Starts one HTTP process's server with its own storage clients. Used by cluster workers and tests. */
export async function startHttp(config: Config, log: Logger = createLogger(config.logLevel, { role: 'http' })): Promise<RunningHttp> {
  const sql = createSql(config);
  const redis = createRedis(config);
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis error'));
  // Give Redis a moment to connect so the process is ready when it starts listening; an outage is
  // not fatal (requests that need Redis fail closed and /readyz reports it).
  await redisReady(redis, 3000).catch(() => log.warn('redis not reachable at start; continuing'));
  let tokens;
  try {
    tokens = await createTokenServices(config, sql, redis, log);
  } catch (err) {
    // A process that cannot start must not linger on its open connections.
    await Promise.allSettled([sql.end({ timeout: 1 }), Promise.resolve(redis.disconnect())]);
    throw err;
  }
  const deps: Deps = { config, log, sql, store: new Store(sql), redis, tokens };
  const router = buildRouter(deps);
  const server = new HttpServer(router, {
    host: config.host, port: config.port, bodyLimitBytes: config.bodyLimitBytes,
    maxInflight: config.maxInflight, debugErrors: config.env === 'development', checkResponses: config.env === 'test', log,
  });
  const port = await server.listen();
  // Until the lifecycle object owns background work: the sweeper runs while the server does.
  const sweeper = createCredentialSweeper(deps);
  sweeper.start();
  let closing: Promise<boolean> | undefined;
  return {
    port, deps, server,
    close: () => (closing ??= (async () => {
      const drained = await server.drain(config.shutdownTimeoutMs);
      await sweeper.close();
      await tokens.close();
      await Promise.allSettled([sql.end({ timeout: 5 }), redis.quit().catch(() => redis.disconnect())]);
      return drained;
    })()),
  };
}
