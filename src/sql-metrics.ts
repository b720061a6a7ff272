import { postgresDuration } from './metrics.js';

type Thenable = { then(onF?: (v: unknown) => unknown, onR?: (e: unknown) => unknown): unknown };

function isStatement(args: unknown[]): boolean {
  return Array.isArray(args[0]) && Array.isArray((args[0] as unknown as { raw?: unknown }).raw)
    && /^\s*\(?\s*(select|insert|update|delete|with)\b/i.test((args[0] as string[])[0] ?? '');
}

/**
 * Times every statement the process's Postgres client runs into svc_postgres_query_duration_seconds,
 * from the first await (when postgres.js sends it) to its result, failures included. Every statement,
 * not a sample: hot paths run none per request (caches and Redis serve them), and one observe is
 * small beside a round trip. Fragments (never awaited) are not timed; transactions hand their callback
 * a timed client too. The same shape as src/tracing/sql.ts, which adds spans when tracing is on.
 */
export function timeSql<S extends object>(sql: S): S {
  const wrap = (client: object): object => new Proxy(client, {
    apply(target, thisArg, args: unknown[]) {
      const q = Reflect.apply(target as (...a: unknown[]) => unknown, thisArg, args);
      if (!isStatement(args)) return q;
      const query = q as Thenable;
      const then = query.then.bind(query);
      let started: Thenable | undefined;
      query.then = (onF, onR) => {
        if (!started) {
          const t0 = performance.now();
          const done = () => postgresDuration.observe((performance.now() - t0) / 1000);
          started = then((v) => { done(); return v; }, (e) => { done(); throw e; }) as Thenable;
        }
        return started.then(onF, onR);
      };
      return q;
    },
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop === 'begin' && typeof v === 'function') {
        return (...args: unknown[]) => {
          const i = args.findIndex((a) => typeof a === 'function');
          if (i >= 0) { const fn = args[i] as (tx: object) => unknown; args[i] = (tx: object) => fn(wrap(tx)); }
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof v === 'function' && prop !== 'constructor' ? v.bind(target) : v;
    },
  });
  return wrap(sql) as S;
}
