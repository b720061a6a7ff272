import t from 'tap';
import { againstFloor, costPerRequest, emptyByKind, wakeupFlags } from '../../perf/lib/cpucost.js';

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

// Issue 35 item 4: the low-load cost is judged against the bare uWS server of the same run.
t.test("svc's paced/saturated ratio is compared with the bare server's, limit 1.3x", async (t) => {
  const f = againstFloor({ pacedUs: 300, satUs: 100 }, { pacedUs: 50, satUs: 20 });
  t.same(f, { ratio: 3, bareRatio: 2.5, relative: 1.2, met: true }, 'svc 3x the bare 2.5x is 1.2x the floor');
  t.equal(againstFloor({ pacedUs: 400, satUs: 100 }, { pacedUs: 50, satUs: 20 })!.met, false, '4x against 2.5x is 1.6x: over');
  t.equal(againstFloor({ pacedUs: 300, satUs: undefined }, { pacedUs: 50, satUs: 20 }), undefined, 'a missing figure gives no verdict');
});
