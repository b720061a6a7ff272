import fc from 'fast-check';
import t from 'tap';
import { deriveRequestStatus, effectiveGrantStatus, effectiveStepStatus, REQUEST_MOVES, STEP_MOVES, type StepStatus } from '../../src/elevation/model.js';

const NOW = 1_000_000;
const STEP_STATES: StepStatus[] = ['pending', 'approved', 'denied', 'cancelled', 'expired'];
const live = { cancelled_at: null, expires_at: NOW + 1000 };
const s = (status: string, expires_at = NOW + 1000) => ({ status, expires_at });

t.test('request status follows the precedence denied > cancelled > expired > approved > partially_approved > pending', async (t) => {
  t.equal(deriveRequestStatus(live, [s('pending'), s('pending')], NOW), 'pending');
  t.equal(deriveRequestStatus(live, [s('approved'), s('pending')], NOW), 'partially_approved');
  t.equal(deriveRequestStatus(live, [s('approved'), s('approved')], NOW), 'approved');
  t.equal(deriveRequestStatus(live, [s('approved'), s('pending', NOW)], NOW), 'expired', 'a pending step past its time expires the request');
  t.equal(deriveRequestStatus({ ...live, expires_at: NOW }, [s('approved')], NOW), 'expired', 'an approved request past its time');
  t.equal(deriveRequestStatus({ ...live, cancelled_at: NOW - 1 }, [s('approved')], NOW), 'cancelled');
  t.equal(deriveRequestStatus({ ...live, cancelled_at: NOW - 1 }, [s('denied')], NOW), 'denied');
  t.equal(deriveRequestStatus(live, [s('expired'), s('cancelled')], NOW), 'cancelled');
  t.equal(deriveRequestStatus(live, [], NOW), 'pending');
});

t.test('every combination of step states maps to exactly the derived rule (property)', async (t) => {
  fc.assert(fc.property(fc.array(fc.constantFrom(...STEP_STATES), { minLength: 1, maxLength: 6 }), fc.boolean(), fc.boolean(), (states, cancelled, past) => {
    const r = { cancelled_at: cancelled ? NOW - 1 : null, expires_at: past ? NOW - 1 : NOW + 1 };
    const got = deriveRequestStatus(r, states.map((x) => s(x)), NOW);
    const want = states.includes('denied') ? 'denied' : cancelled || states.includes('cancelled') ? 'cancelled'
      : past || states.includes('expired') ? 'expired' : states.every((x) => x === 'approved') ? 'approved'
        : states.includes('approved') ? 'partially_approved' : 'pending';
    return got === want;
  }));
  t.pass();
});

t.test('step moves: only the listed (from, decision) pairs are legal', async (t) => {
  const legal = new Set(['pending:approve', 'pending:deny', 'approved:deny']);
  for (const from of STEP_STATES) for (const d of ['approve', 'deny'] as const) {
    t.equal(STEP_MOVES[d].has(from), legal.has(`${from}:${d}`), `${from} --${d}-->`);
  }
  for (const from of ['denied', 'cancelled', 'expired'] as const) {
    t.notOk(REQUEST_MOVES.decide.has(from), `no decision on a ${from} request`);
    t.notOk(REQUEST_MOVES.cancel.has(from), `no cancel of a ${from} request`);
  }
});

t.test('expiry on read', async (t) => {
  t.equal(effectiveStepStatus(s('pending', NOW), NOW), 'expired');
  t.equal(effectiveStepStatus(s('approved', NOW), NOW), 'approved', 'a decided step keeps its decision');
  t.equal(effectiveGrantStatus(s('active', NOW), NOW), 'expired');
  t.equal(effectiveGrantStatus(s('revoked', NOW), NOW), 'revoked');
  t.equal(effectiveGrantStatus(s('active', NOW + 1), NOW), 'active');
});
