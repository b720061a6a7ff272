type Thenable = { then(onF?: (v: unknown) => unknown, onR?: (e: unknown) => unknown): unknown };

/** Called when a statement is sent; returns what to call with its outcome, or nothing to skip it. */
export type StatementHook = (strings: TemplateStringsArray) => ((error: unknown) => void) | undefined;

const STATEMENT = /^\s*\(?\s*(select|insert|update|delete|with)\b/i;

function isStatement(args: unknown[]): args is [TemplateStringsArray, ...unknown[]] {
  return Array.isArray(args[0]) && Array.isArray((args[0] as unknown as { raw?: unknown }).raw)
    && STATEMENT.test((args[0] as string[])[0] ?? '');
}

/**
 * The one place that watches the statements a postgres.js client runs (it has no instrumentation).
 * A tagged template only builds a query; it runs when awaited, so the hooks start at the first `then`
 * and finish with its result, failures included. Fragments (`sql\`and x = ${y}\``) are never awaited
 * and are not seen. Transactions (`begin`) hand their callback a watched transaction client too.
 * Metrics (src/sql-metrics.ts) and spans (src/tracing/sql.ts) are hooks of this one proxy. `tag` is a
 * value the client and its transaction clients answer under a symbol (a traced view's context).
 */
export function hookStatements<S extends object>(sql: S, hooks: readonly StatementHook[], tag?: { key: symbol; value: unknown }): S {
  const wrap = (client: object): object => new Proxy(client, {
    apply(target, thisArg, args: unknown[]) {
      const q = Reflect.apply(target as (...a: unknown[]) => unknown, thisArg, args);
      if (!isStatement(args)) return q;
      const strings = args[0];
      const query = q as Thenable;
      const then = query.then.bind(query);
      let started: Thenable | undefined;
      query.then = (onF, onR) => {
        if (!started) {
          const finishes: ((error: unknown) => void)[] = [];
          for (const hook of hooks) { const f = hook(strings); if (f) finishes.push(f); }
          if (finishes.length === 0) { started = then() as Thenable; }
          else {
            const finish = (e: unknown) => { for (const f of finishes) f(e); };
            started = then((v) => { finish(undefined); return v; }, (e) => { finish(e ?? new Error('statement failed')); throw e; }) as Thenable;
          }
        }
        return started.then(onF, onR);
      };
      return q;
    },
    get(target, prop, receiver) {
      // What the view was made for (its trace), readable on it and on its transactions.
      if (tag !== undefined && prop === tag.key) return tag.value;
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
