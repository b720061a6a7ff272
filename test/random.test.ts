import t from 'tap';
import { randomBytes } from '../src/random.js';

// The pooled CSPRNG source behind ids, codes, tokens and IVs: each call its own bytes, never repeated,
// across pool refills, and of the length asked for.
t.test('lengths, including values larger than the pool hands out', async (t) => {
  for (const n of [0, 1, 2, 12, 32, 256, 257, 5000]) t.equal(randomBytes(n).length, n, `${n} bytes`);
});

t.test('100,000 IV-sized values across many refills are all distinct', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 100_000; i++) seen.add(randomBytes(12).toString('hex'));
  t.equal(seen.size, 100_000);
});

t.test('a returned buffer is its own: later calls do not change it', async (t) => {
  const a = randomBytes(32);
  const copy = Buffer.from(a);
  for (let i = 0; i < 1000; i++) randomBytes(32);
  t.same(a, copy);
  t.not(a.toString('hex'), '0'.repeat(64));
});
