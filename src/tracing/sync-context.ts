import { ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api';

/**
 * The HTTP process's context manager: a context is active only for the synchronous extent of
 * `with`, and nothing follows an await. It never enables promise hooks. On Node 20, enabling an
 * AsyncLocalStorage once, even for a moment, makes every promise of the process slower for the rest
 * of its life (V8's promise-hook protector is one-way: +19% CPU per introspection at 1% sampling,
 * perf/RESULTS.md run 82), so a sampled request carries its context explicitly instead: its server
 * span is on the request, and the clients it uses are views that make their spans under it
 * (src/request-deps.ts). Library code that reads the active context synchronously (BullMQ's
 * producer telemetry) is run inside `with`.
 */
export class SyncContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;

  active(): Context { return this.current; }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const prev = this.current;
    this.current = ctx;
    try {
      return fn.apply(thisArg, args);
    } finally {
      this.current = prev;
    }
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...a: unknown[]) => unknown;
    return ((...a: unknown[]) => this.with(ctx, fn, undefined, ...a)) as unknown as T;
  }

  enable(): this { return this; }

  disable(): this { this.current = ROOT_CONTEXT; return this; }
}
