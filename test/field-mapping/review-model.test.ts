import fc from 'fast-check';
import t from 'tap';
import { decide, isTerminal, REVIEW_STATUSES, TRANSITIONS, type ReviewStatus } from '../../src/field-mapping/review-states.js';

// The transition table against a tiny model: any sequence of requested statuses leaves the task in a
// status reachable by legal moves only, terminal statuses never move, and a repeat is never a move.
t.test('random request sequences follow the table', async (t) => {
  const legal = new Set(TRANSITIONS.map((x) => `${x.from}>${x.to}`));
  fc.assert(fc.property(fc.array(fc.constantFrom(...REVIEW_STATUSES), { maxLength: 30 }), (requests) => {
    let s: ReviewStatus = 'open';
    for (const to of requests) {
      const d = decide(s, to);
      if (d.kind === 'repeat') { if (s !== to) return false; continue; }
      if (d.kind === 'illegal') { if (legal.has(`${s}>${to}`) || s === to) return false; continue; }
      if (isTerminal(s)) return false;
      s = to;
    }
    return true;
  }), { numRuns: 500 });
  t.ok(isTerminal('resolved') && isTerminal('dismissed'));
  t.notOk(isTerminal('approved'));
  t.same(TRANSITIONS.filter((x) => x.effect === 'apply_change').map((x) => x.to), ['approved', 'approved']);
});
