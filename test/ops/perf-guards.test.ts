import t from 'tap';
import { costPerRequest, emptyByKind, wakeupFlags } from '../../perf/lib/cpucost.js';

// Issue 22's guard in the perf report: a paced step whose CPU per request exceeds 1.5x the saturated
// step's (same run) is flagged, so a per-wake-up cost shows up as a visible line, not a drifting figure.
t.test('a paced step costing more than 1.5x the saturated step per request is flagged', async (t) => {
  const flags = wakeupFlags([{ offered: 500, totalUs: 421.8 }, { offered: 1000, totalUs: 100 }, { offered: 2000, totalUs: 112.5 }], 75);
  t.same(flags.map((f) => f.flagged), [true, false, false]);
  t.equal(flags[0]!.ratio, 5.62);
  t.equal(flags[2]!.ratio, 1.5, 'exactly 1.5x is within the limit');
  t.same(wakeupFlags([{ offered: 500, totalUs: 400 }], 0).map((f) => f.flagged), [false], 'no saturated figure: nothing to compare, nothing flagged');
});

t.test('CPU per request sums every process kind and divides by correct answers', async (t) => {
  const cpu = { ...emptyByKind(), http: 0.5, crypto: 1, redis: 0.25 };
  const c = costPerRequest(cpu, 10, 5000);
  t.equal(c.totalUs, 350, '1.75 CPU-seconds over 5,000 answers');
  t.equal(c.us.crypto, 200);
  t.equal(c.cores.http, 0.05, 'cores busy = CPU seconds / wall seconds');
  t.equal(costPerRequest(cpu, 10, 0).totalUs, 0, 'no answers: no figure, no division by zero');
});
