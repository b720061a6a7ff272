import fc from 'fast-check';
import t from 'tap';
import { decide, type CredentialEvent, type CredentialState, type CredentialStatus } from '../../src/logging/credential-states.js';

type Cred = { version: number; status: CredentialStatus; retire_after: number | null };
const state = (rotation_state: CredentialState['rotation_state'], ...creds: Array<[number, CredentialStatus, number?]>): CredentialState =>
  ({ rotation_state, credentials: creds.map(([version, status, retire_after]) => ({ version, status, retire_after: retire_after ?? null })) });

// Each move from a representative state: the credential changes and the destination's new state.
t.test('transition table', async (t) => {
  const now = 1_000;
  const cases: Array<[string, CredentialState, CredentialEvent, ReturnType<typeof decide>]> = [
    ['prepare from idle', state('idle'), { kind: 'prepare' }, { kind: 'apply', changes: [], insert: 1, rotation_state: 'prepared' }],
    ['prepare again aborts the earlier next', state('prepared', [1, 'current'], [2, 'next']), { kind: 'prepare' },
      { kind: 'apply', changes: [{ version: 2, status: 'aborted' }], insert: 3, rotation_state: 'prepared' }],
    ['activate the first credential: no overlap', state('prepared', [1, 'next']), { kind: 'activate', now, overlapMs: 50 },
      { kind: 'apply', changes: [{ version: 1, status: 'current', activated_at: now }], insert: null, rotation_state: 'idle' }],
    ['activate over a current: overlap', state('prepared', [1, 'previous', 2_000], [2, 'current'], [3, 'next']), { kind: 'activate', now, overlapMs: 50 },
      { kind: 'apply', changes: [{ version: 1, status: 'retired', retired_at: now }, { version: 2, status: 'previous', retire_after: now + 50 }, { version: 3, status: 'current', activated_at: now }], insert: null, rotation_state: 'overlap' }],
    ['activate with a zero overlap retires the current at once', state('prepared', [1, 'current'], [2, 'next']), { kind: 'activate', now, overlapMs: 0 },
      { kind: 'apply', changes: [{ version: 1, status: 'retired', retired_at: now }, { version: 2, status: 'current', activated_at: now }], insert: null, rotation_state: 'idle' }],
    ['activate with nothing prepared', state('overlap', [1, 'previous', 2_000], [2, 'current']), { kind: 'activate', now, overlapMs: 50 }, { kind: 'refused', reason: 'not_prepared' }],
    ['abort during an overlap returns to it', state('prepared', [1, 'previous', 2_000], [2, 'current'], [3, 'next']), { kind: 'abort' },
      { kind: 'apply', changes: [{ version: 3, status: 'aborted' }], insert: null, rotation_state: 'overlap' }],
    ['abort without an overlap', state('prepared', [1, 'current'], [2, 'next']), { kind: 'abort' },
      { kind: 'apply', changes: [{ version: 2, status: 'aborted' }], insert: null, rotation_state: 'idle' }],
    ['abort with nothing prepared', state('idle', [1, 'current']), { kind: 'abort' }, { kind: 'refused', reason: 'not_prepared' }],
    ['expire: overlap ends', state('overlap', [1, 'previous', now], [2, 'current']), { kind: 'expire', now },
      { kind: 'apply', changes: [{ version: 1, status: 'retired', retired_at: now }], insert: null, rotation_state: 'idle' }],
    ['expire before retire_after changes nothing', state('overlap', [1, 'previous', now + 1], [2, 'current']), { kind: 'expire', now },
      { kind: 'apply', changes: [], insert: null, rotation_state: null }],
    ['expire while prepared keeps the prepared state', state('prepared', [1, 'previous', now], [2, 'current'], [3, 'next']), { kind: 'expire', now },
      { kind: 'apply', changes: [{ version: 1, status: 'retired', retired_at: now }], insert: null, rotation_state: null }],
  ];
  for (const [name, s, e, want] of cases) t.same(decide(s, e), want, name);
});

// Any sequence of moves, applied to a tiny model of the stored rows, keeps the invariants the admin API
// and the sink signer rely on: at most one next, current and previous version; `prepared` exactly when a
// next version exists; otherwise `overlap` exactly when a previous one is still valid; versions only grow.
t.test('random move sequences keep the invariants', async (t) => {
  const event = fc.oneof(
    fc.constant<CredentialEvent>({ kind: 'prepare' }),
    fc.constant<CredentialEvent>({ kind: 'abort' }),
    fc.constantFrom(0, 10, 100).map((overlapMs) => ({ kind: 'activate', overlapMs }) as const),
    fc.constant({ kind: 'expire' } as const),
  );
  fc.assert(fc.property(fc.array(fc.tuple(event, fc.integer({ min: 0, max: 50 })), { maxLength: 40 }), (steps) => {
    let s: { rotation_state: CredentialState['rotation_state']; credentials: Cred[] } = { rotation_state: 'idle', credentials: [] };
    let now = 0;
    for (const [ev, dt] of steps) {
      now += dt;
      const e: CredentialEvent = ev.kind === 'activate' || ev.kind === 'expire' ? { ...ev, now } as CredentialEvent : ev;
      const d = decide(s, e);
      const hadNext = s.credentials.some((c) => c.status === 'next');
      if (d.kind === 'refused') { if (hadNext || (e.kind !== 'activate' && e.kind !== 'abort')) return false; continue; }
      const creds = s.credentials.map((c) => ({ ...c }));
      for (const ch of d.changes) {
        const c = creds.find((x) => x.version === ch.version);
        if (!c) return false;
        c.status = ch.status;
        c.retire_after = ch.retire_after ?? null;
      }
      if (d.insert !== null) {
        if (creds.some((c) => c.version >= d.insert!)) return false;
        creds.push({ version: d.insert, status: 'next', retire_after: null });
      }
      s = { rotation_state: d.rotation_state ?? s.rotation_state, credentials: creds };
      const count = (st: CredentialStatus) => creds.filter((c) => c.status === st).length;
      if (count('next') > 1 || count('current') > 1 || count('previous') > 1) return false;
      if ((s.rotation_state === 'prepared') !== (count('next') === 1)) return false;
      if (s.rotation_state !== 'prepared' && (s.rotation_state === 'overlap') !== (count('previous') === 1)) return false;
    }
    return true;
  }), { numRuns: 1000 });
  t.pass('1000 random sequences');
});
