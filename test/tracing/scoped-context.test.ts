import { createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import fc from 'fast-check';
import t from 'tap';
import { ScopedContextManager } from '../../src/tracing/scoped-context.js';

// The context manager tracing runs on keeps AsyncLocalStorage on only while a trace scope is open
// (src/tracing/scoped-context.ts). What must not change for that: every overlapping trace keeps its
// own context across awaits while others open and close, and nothing leaks outside them.

const key = createContextKey('scope');
const manager = new ScopedContextManager().enable();
const storageOn = () => (manager as unknown as { _asyncLocalStorage: { enabled: boolean } })._asyncLocalStorage.enabled;
const tick = (kind: number) => new Promise<void>((r) => { if (kind === 0) queueMicrotask(r); else if (kind === 1) setImmediate(r); else setTimeout(r, 0); });

t.test('overlapping scopes each see their own context after every await, and none after the last ends', async (t) => {
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ start: fc.nat(3), steps: fc.array(fc.nat(2), { maxLength: 6 }) }), { minLength: 1, maxLength: 6 }),
    async (scopes) => {
      const seen: string[] = [];
      await Promise.all(scopes.map(async (s, i) => {
        for (let k = 0; k < s.start; k++) await tick(1);
        const ctx = ROOT_CONTEXT.setValue(key, i);
        await manager.with(ctx, async () => {
          for (const step of s.steps) {
            await tick(step);
            if (manager.active().getValue(key) !== i) seen.push(`scope ${i} saw ${String(manager.active().getValue(key))}`);
          }
        });
        if (manager.active().getValue(key) !== undefined) seen.push(`after scope ${i}: ${String(manager.active().getValue(key))}`);
      }));
      if (seen.length) throw new Error(seen.join('; '));
      if (storageOn()) throw new Error('the storage stayed on after every scope ended');
    },
  ), { numRuns: 200 });
  t.equal(manager.active(), ROOT_CONTEXT);
});

t.test('a scope that throws or rejects still closes', async (t) => {
  t.throws(() => manager.with(ROOT_CONTEXT.setValue(key, 'x'), () => { throw new Error('sync'); }));
  await t.rejects(manager.with(ROOT_CONTEXT.setValue(key, 'y'), async () => { await tick(1); throw new Error('async'); }));
  await tick(1);
  t.notOk(storageOn(), 'storage off once nothing is open');
  t.equal(manager.active(), ROOT_CONTEXT);
});

t.test('nested scopes restore the outer context when the inner one ends', async (t) => {
  const outer = ROOT_CONTEXT.setValue(key, 'outer');
  await manager.with(outer, async () => {
    await manager.with(outer.setValue(key, 'inner'), async () => { await tick(2); t.equal(manager.active().getValue(key), 'inner'); });
    await tick(1);
    t.equal(manager.active().getValue(key), 'outer');
    t.ok(storageOn(), 'storage on while the outer scope is open');
  });
});
