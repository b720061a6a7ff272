import t from 'tap';
import { admitSigning, predictedWaitMs, type AdmissionLimits } from '../../src/tokens/admission.js';

// The defaults: floor 192, 200 ms deadline budget, hard bound 1024, 2 signing threads per process.
const L: AdmissionLimits = { floor: 192, budgetMs: 200, hardMax: 1024, threads: 2 };

t.test('a steady closed loop of 64 or 256 connections is never refused, however slow signing is', async (t) => {
  // 256 connections over 2 processes: at most 128 ahead in one process (192 with an uneven split).
  for (const perOpMs of [0.3, 3, 30, 300]) {
    t.ok(admitSigning(31, perOpMs, L), `32 ahead (64 connections), ${perOpMs} ms per signature`);
    t.ok(admitSigning(127, perOpMs, L), `128 ahead (256 connections), ${perOpMs} ms per signature`);
    t.ok(admitSigning(191, perOpMs, L), `192 ahead (an uneven split), ${perOpMs} ms per signature`);
  }
});

t.test('past the floor, the deadline budget decides', async (t) => {
  // 400 ahead on 2 threads at 0.8 ms: 160 ms predicted, within 200 ms.
  t.equal(predictedWaitMs(400, 0.8, 2), 160);
  t.ok(admitSigning(400, 0.8, L), 'a wait that fits the budget is admitted');
  // 600 ahead at 0.8 ms: 240 ms, over budget: an open-loop offer past capacity is refused.
  t.notOk(admitSigning(600, 0.8, L), 'a wait past the budget is refused');
  t.ok(admitSigning(600, 0.8, { ...L, budgetMs: 0 }), 'budget 0: only the count bounds apply');
});

t.test('the hard bound refuses whatever the prediction', async (t) => {
  t.notOk(admitSigning(1024, 0, L), 'at the bound, even with nothing measured yet');
  t.notOk(admitSigning(5000, 0.001, { ...L, budgetMs: 0 }), 'past the bound with the budget off');
  t.notOk(admitSigning(10, 0, { ...L, hardMax: 10 }), 'a bound below the floor wins over the floor');
});

t.test('before any signature was measured, only the bounds apply', async (t) => {
  t.ok(admitSigning(500, 0, L), 'no measurement yet: predicted wait 0');
});
