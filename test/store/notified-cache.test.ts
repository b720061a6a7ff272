import t from 'tap';
import { NotifiedCache } from '../../src/notified-cache.js';
import { closeRedis, createRedis } from '../../src/store/redis.js';
import { uniqueName, testConfig } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';

// The one per-process cache mechanism (clients, tenant settings, plugin switches, partition settings):
// hits answer without a promise, concurrent misses share one load, misses can live shorter, and a
// change announced by one "process" (cache instance) evicts the key in another through real Redis pub/sub.
const config = testConfig();
const pub = createRedis(config, 'cache');
const subs = [createRedis(config, 'subscriber', { lazy: true }), createRedis(config, 'subscriber', { lazy: true })];
t.teardown(async () => { for (const s of subs) s.disconnect(); await closeRedis(pub); });
const channel = config.redisPrefix + uniqueName('cache-test');

function source() {
  const values = new Map<string, string | null>([['a', 'A1']]);
  let loads = 0;
  return { values, loads: () => loads, load: async (k: string) => { loads++; await Promise.resolve(); return values.get(k) ?? null; } };
}

t.test('a hit is the value itself; concurrent misses share one load', async (t) => {
  const src = source();
  const c = new NotifiedCache<string | null>({ name: 'test', ttlMs: 60_000, load: src.load });
  const [p1, p2] = [c.get('a'), c.get('a')];
  t.ok(p1 instanceof Promise, 'a miss is a promise');
  t.same(await Promise.all([p1, p2]), ['A1', 'A1']);
  t.equal(src.loads(), 1, 'one load for both');
  t.equal(c.get('a'), 'A1', 'a hit is answered without a promise');
  src.values.set('a', 'A2');
  t.equal(c.get('a'), 'A1', 'within the TTL the cached value stands');
  c.forget('a');
  t.equal(await c.get('a'), 'A2', 'forgotten: loaded again');
});

t.test('a miss lives missTtlMs, a value ttlMs', async (t) => {
  const src = source();
  const c = new NotifiedCache<string | null>({ name: 'test', ttlMs: 60_000, missTtlMs: 1, isMiss: (v) => v === null, load: src.load });
  t.equal(await c.get('b'), null);
  src.values.set('b', 'B1');
  await waitFor(async () => (await c.get('b')) === 'B1', 2_000);
  t.equal(await c.get('a'), 'A1');
  const loads = src.loads();
  t.equal(c.get('a'), 'A1');
  t.equal(src.loads(), loads, 'a value is not reloaded within its TTL');
});

t.test('without shared loads, each miss runs its own loader (the caller\'s transaction)', async (t) => {
  const c = new NotifiedCache<string>({ name: 'test', ttlMs: 60_000, shareLoads: false });
  const [x, y] = await Promise.all([c.get('k', async () => 'x'), c.get('k', async () => 'y')]);
  t.same([x, y], ['x', 'y']);
  t.throws(() => new NotifiedCache<string>({ name: 'test', ttlMs: 1 }).get('k'), new TypeError('test cache: no loader'));
});

t.test('changed() in one process evicts the key in every subscribed one', async (t) => {
  const src = source();
  const [one, two] = [0, 1].map(() => new NotifiedCache<string | null>({ name: 'test', ttlMs: 60_000, load: src.load, channel, pub }));
  for (const [i, c] of [one!, two!].entries()) { await subs[i]!.connect(); await c.subscribe(subs[i]!); }
  t.equal(await one!.get('a'), 'A1');
  t.equal(await two!.get('a'), 'A1');
  src.values.set('a', 'A2');
  await one!.changed('a');
  t.equal(await one!.get('a'), 'A2', 'evicted at once where the change was made');
  await waitFor(async () => (await two!.get('a')) === 'A2', 2_000);
  t.pass('evicted in the other process by the notice');
  two!.clear();
  t.ok(two!.get('a') instanceof Promise, 'clear() forgets every entry');
});

t.test('a scan of made-up keys keeps the cache at its bound, dropping the oldest loaded first', async (t) => {
  const src = source();
  const c = new NotifiedCache<string | null>({ name: 'test', ttlMs: 60_000, load: src.load, maxEntries: 100 });
  await c.get('a');
  for (let i = 0; i < 1000; i++) await c.get(`made-up-${i}`);
  t.equal((c as unknown as { entries: Map<string, unknown> }).entries.size, 100, 'no more than the bound');
  const before = src.loads();
  t.equal(c.get('made-up-999'), null, 'the newest is still a hit');
  const again = c.get('a');
  t.ok(again instanceof Promise, 'the oldest was dropped: loaded again');
  t.equal(await again, 'A1');
  t.equal(src.loads(), before + 1);
});

t.test('bad options are programmer errors', async (t) => {
  t.throws(() => new NotifiedCache({ name: 'x', ttlMs: 0 }), new RangeError('x cache: ttlMs must be positive'));
  t.throws(() => new NotifiedCache({ name: 'x', ttlMs: 1, channel: 'c' }), new TypeError('x cache: a channel needs a pub connection'));
});
