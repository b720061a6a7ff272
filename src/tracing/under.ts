import type { Redis } from 'ioredis';
import { hookStatements } from '../sql-statements.js';
import { statementsUnder } from './sql.js';
import { redisSpan } from './redis.js';
import { endWithError, type Context, type Span } from './tracer.js';

/**
 * Client views for one sampled request of the HTTP process, where nothing carries a context across
 * awaits (sync-context.ts): each makes its client spans under the context it was made with. Made only
 * for sampled requests, so the other 99 in 100 use the clients themselves and pay nothing.
 */

const TRACE = Symbol('svc.trace');

/** Redis commands, as ioredis names its methods (custom script commands are checked apart). */
let builtins: Set<string> | undefined;

function ended<T>(p: Promise<T>, span: Span): Promise<T> {
  p.then(() => span.end(), (err: unknown) => endWithError(span, err));
  return p;
}

/**
 * `redis` whose commands each get a client span (`redis GET`, name only: keys hold token ids and code
 * hashes), and whose pipelines and transactions get one span per batch sent (`redis PIPELINE`, with
 * the count). Everything else (events, status, duplicate) is the client's own.
 */
export function redisUnder<T extends Redis>(redis: T, parent: Context | undefined, role = 'cache'): T {
  // No trace (an unsampled request): the client itself.
  if (parent === undefined) return redis;
  builtins ??= new Set(redis.getBuiltinCommands());
  const scripts = (redis as unknown as { scriptsSet: Record<string, unknown> }).scriptsSet ?? {};
  return new Proxy(redis, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      const fn = v as (...a: unknown[]) => unknown;
      if (prop === 'pipeline' || prop === 'multi') {
        return (...a: unknown[]) => {
          const batch = fn.apply(target, a) as { exec(...e: unknown[]): Promise<unknown>; length: number };
          const exec = batch.exec.bind(batch);
          batch.exec = (...e: unknown[]) => {
            const span = redisSpan(prop.toUpperCase(), role, parent);
            span.setAttribute('db.operation.batch.size', batch.length);
            return ended(exec(...e), span);
          };
          return batch;
        };
      }
      if (builtins!.has(prop) || prop in scripts) {
        return (...a: unknown[]) => {
          const span = redisSpan(prop.toUpperCase(), role, parent);
          return ended(fn.apply(target, a) as Promise<unknown>, span);
        };
      }
      return fn.bind(target);
    },
  });
}

/** `sql` whose statements (its transactions' too) get client spans under `parent`, and which names its trace (traceOf); `sql` itself without one. */
export function sqlUnder<S extends object>(sql: S, parent: Context | undefined): S {
  if (parent === undefined) return sql;
  return hookStatements(sql, [statementsUnder(parent)], { key: TRACE, value: parent });
}

/** The trace a client view (or a transaction of one) was made for; undefined for the clients themselves. */
export function traceOf(db: object): Context | undefined {
  return (db as { [TRACE]?: Context })[TRACE];
}
