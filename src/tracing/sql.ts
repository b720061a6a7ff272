import { endWithError, hasActiveSpan, SpanKind, tracer } from './tracer.js';

type Thenable = { then(onF?: (v: unknown) => unknown, onR?: (e: unknown) => unknown): unknown };

/** `SELECT clients`: the statement's verb and first table, from the template's text (never its values). */
function nameOf(text: string): string {
  const verb = /^\s*\(?\s*(select|insert|update|delete|with)\b/i.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
  const table = /\b(?:from|into|update)\s+("?[a-z_][\w.]*"?)/i.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

/** The statement text with `$n` where each value goes: what the span shows (values never). */
function textOf(strings: TemplateStringsArray): string {
  return strings.reduce((acc, s, i) => (i === 0 ? s : `${acc}$${i}${s}`), '').replace(/\s+/g, ' ').trim().slice(0, 2000);
}

function isTemplateCall(args: unknown[]): args is [TemplateStringsArray, ...unknown[]] {
  return Array.isArray(args[0]) && Array.isArray((args[0] as unknown as { raw?: unknown }).raw);
}

/**
 * The one SQL client with a client span per statement run (postgres.js has no instrumentation). A
 * tagged template only builds a query; it runs when awaited, so the span starts at the first `then`
 * and ends with the result. Fragments (`sql\`and x = ${y}\``) are never awaited and make no span.
 * Transactions (`begin`) hand their callback a traced transaction client too. Only called with tracing on.
 */
export function traceSql<S extends object>(sql: S): S {
  const wrap = (client: object): object => new Proxy(client, {
    apply(target, thisArg, args: unknown[]) {
      const q = Reflect.apply(target as (...a: unknown[]) => unknown, thisArg, args);
      if (!isTemplateCall(args) || !/^\s*\(?\s*(select|insert|update|delete|with)\b/i.test(args[0][0] ?? '')) return q;
      const text = textOf(args[0]);
      const query = q as Thenable;
      const then = query.then.bind(query);
      let started: Thenable | undefined;
      query.then = (onF, onR) => {
        // Only within a trace (see traceRedis): a statement outside one runs unrecorded.
        if (!started && !hasActiveSpan()) return then(onF, onR);
        if (!started) {
          const span = tracer().startSpan(nameOf(text), { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.query.text': text } });
          started = then((v) => { span.end(); return v; }, (e) => { endWithError(span, e); throw e; }) as Thenable;
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
