import { ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';

/**
 * AsyncLocalStorage only while a trace is open. On Node 20 an enabled AsyncLocalStorage turns on
 * promise hooks for every promise of the process, and they stay on: at 1% sampling the first sampled
 * request made the other 99 pay them too (+23% per introspection, perf/RESULTS.md run 77). This
 * manager counts the `with` scopes in progress (a scope returning a promise lasts until it settles)
 * and disables the storage when the last one ends, which turns the hooks off again; the next scope
 * turns them on. What a trace leaves running after its scope (a timer, a late callback) then runs
 * with no active context, so it makes no child span rather than a wrong one.
 */
export class ScopedContextManager extends AsyncLocalStorageContextManager {
  private open = 0;
  private readonly close = () => { if (--this.open === 0) this.disable(); };

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    // Nothing open and nothing to carry: the storage would answer ROOT_CONTEXT anyway.
    if (this.open === 0 && ctx === ROOT_CONTEXT) return fn.apply(thisArg, args);
    this.open++;
    let out: ReturnType<F>;
    try {
      out = super.with(ctx, fn, thisArg, ...args);
    } catch (err) {
      this.close();
      throw err;
    }
    // Native promises only: a lazy thenable (a postgres.js query) would run if we called its then.
    if ((out as unknown) instanceof Promise) {
      (out as unknown as Promise<unknown>).then(this.close, this.close);
    } else {
      this.close();
    }
    return out;
  }
}
