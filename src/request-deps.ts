import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Deps } from './deps.js';
import type { HttpRequest } from './http/request.js';
import { Store } from './store/index.js';
import type { Sql } from './sql.js';
import { spanIds } from './tracing/http.js';
import { trace } from './tracing/tracer.js';
import { redisUnder, sqlUnder } from './tracing/under.js';

/**
 * The deps a request's handler works with: the process's own, or for a sampled request (one with a
 * server span) a view whose Redis and Postgres clients make their spans under that span, whose log
 * lines carry its ids, and whose `trace` the services that take it explicitly are given. Made once per
 * sampled request; an unsampled one costs a field read.
 */
export function depsFor(deps: Deps, req: HttpRequest): Deps {
  const span = req.span;
  if (span === undefined) return deps;
  return (req.traced ??= traced(deps, trace.setSpan(ROOT_CONTEXT, span)));
}

/** Each client view is made on first use: an introspection never touches Postgres, and most handlers never log. */
function traced(deps: Deps, ctx: NonNullable<Deps['trace']>): Deps {
  let sql: Sql | undefined;
  let redis: Deps['redis'] | undefined;
  let store: Store | undefined;
  let log: Deps['log'] | undefined;
  return {
    ...deps,
    trace: ctx,
    get sql() { return (sql ??= sqlUnder(deps.sql, ctx) as Sql); },
    get redis() { return (redis ??= redisUnder(deps.redis, ctx)); },
    get store() { return (store ??= new Store(this.sql, deps.store.pii, deps.store.replica)); },
    get log() { return (log ??= deps.log.child(spanIds(trace.getSpan(ctx)))); },
  };
}
