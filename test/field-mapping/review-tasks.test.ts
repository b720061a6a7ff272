import t from 'tap';
import { REVIEW_STATUSES, TRANSITIONS } from '../../src/field-mapping/review-states.js';
import { adminOf, events } from '../admin/helpers.js';
import { startTestServer } from '../helpers/server.js';

const srv = await startTestServer();
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'fmrev');
const repo = srv.deps.store.forTenant(tenantId).reviewTasks;
const path = (id: string) => `/api/admin/field-mapping/review-tasks/${id}/transition`;

let n = 0;
async function task(change: { email: string; name?: string } | null = null, userId: string | null = null) {
  return (await repo.insert({
    taskType: userId ? 'import_conflict' : 'import_warning', reasons: [{ code: 'required_missing', severity: 'warning', targetRef: 'name' }],
    jobId: 'job_test', rowIndex: n++, userId, pendingChange: change,
  }))!;
}

t.test('every pair of statuses: legal moves succeed, the rest are 409 conflict', async (t) => {
  const legal = new Set(TRANSITIONS.map((x) => `${x.from}>${x.to}`));
  // A path from open to each status, through legal moves.
  const reach: Record<string, string[]> = { open: [], in_review: ['in_review'], approved: ['approved'], rejected: ['rejected'], resolved: ['rejected', 'resolved'], dismissed: ['dismissed'] };
  for (const from of REVIEW_STATUSES) {
    for (const to of REVIEW_STATUSES) {
      const tk = await task();
      for (const s of reach[from]!) t.equal((await call('POST', path(tk.id), { status: s })).status, 200, `reach ${s}`);
      const res = await call('POST', path(tk.id), { status: to });
      if (from === to) t.same([res.status, res.body.result], [200, { id: tk.id, previousStatus: from, status: to, idempotent: true }], `${from} -> ${to} repeats`);
      else if (legal.has(`${from}>${to}`)) t.same([res.status, res.body.result], [200, { id: tk.id, previousStatus: from, status: to, idempotent: false }], `${from} -> ${to}`);
      else t.same([res.status, res.body.error], [409, 'conflict'], `${from} -> ${to} refused`);
    }
  }
});

t.test('approve applies the pending change (user.created), reject discards it', async (t) => {
  const a = await task({ email: 'approved.person@example.com', name: 'Ap Proved' });
  const r = await call('POST', path(a.id), { status: 'approved', assignedTo: 'alice' });
  t.same(r.body.result, { id: a.id, previousStatus: 'open', status: 'approved', idempotent: false });
  const u = await srv.deps.store.forTenant(tenantId).users.getByEmail('approved.person@example.com');
  t.equal(u?.name, 'Ap Proved');
  const ev = (await events(srv, tenantId)).filter((e) => e.data.user_id === u!.id);
  t.same(ev.map((e) => e.event), ['user.created']);
  const got = await call('GET', `/api/admin/field-mapping/review-tasks/${a.id}`);
  t.match(got.body, { id: a.id, status: 'approved', assigned_to: 'alice', pending_fields: [] });

  const existing = u!;
  const c = await task({ email: 'approved.person@example.com', name: 'New Name' }, existing.id);
  t.equal((await call('POST', path(c.id), { status: 'rejected' })).status, 200);
  t.equal((await srv.deps.store.forTenant(tenantId).users.get(existing.id))?.name, 'Ap Proved', 'rejected: the user is unchanged');
  t.same((await call('GET', `/api/admin/field-mapping/review-tasks/${c.id}`)).body.pending_fields, [], 'the change is discarded');

  const d = await task({ email: 'approved.person@example.com', name: 'Newer Name' }, existing.id);
  t.same((await call('GET', `/api/admin/field-mapping/review-tasks/${d.id}`)).body.pending_fields, ['email', 'name']);
  t.equal((await call('POST', path(d.id), { status: 'approved' })).status, 200);
  t.equal((await srv.deps.store.forTenant(tenantId).users.get(existing.id))?.name, 'Newer Name', 'approved conflict updates the matched user');
  t.same((await events(srv, tenantId)).filter((e) => e.data.user_id === existing.id).map((e) => e.event), ['user.created', 'user.updated']);
});

t.test('assignedTo: omitted keeps, null clears; reasonCodes replace', async (t) => {
  const a = await task();
  await call('POST', path(a.id), { status: 'in_review', assignedTo: 'bob' });
  await call('POST', path(a.id), { status: 'open' });
  t.equal((await call('GET', `/api/admin/field-mapping/review-tasks/${a.id}`)).body.assigned_to, 'bob');
  const same = await call('POST', path(a.id), { status: 'open', assignedTo: null, reasonCodes: ['checked_by_hand'] });
  t.same(same.body.result, { id: a.id, previousStatus: 'open', status: 'open', idempotent: false }, 'a reassignment in place is a change');
  const got = (await call('GET', `/api/admin/field-mapping/review-tasks/${a.id}`)).body;
  t.equal(got.assigned_to, null);
  t.same(got.reason_codes, ['checked_by_hand']);
});

t.test('Idempotency-Key: same body replays, another body is 409', async (t) => {
  const a = await task();
  const h = { 'idempotency-key': 'key-1' };
  const first = await call('POST', path(a.id), { status: 'in_review', assignedTo: 'carol' }, h);
  t.same(first.body.result, { id: a.id, previousStatus: 'open', status: 'in_review', idempotent: false });
  await call('POST', path(a.id), { status: 'approved' });
  const again = await call('POST', path(a.id), { status: 'in_review', assignedTo: 'carol' }, h);
  t.same([again.status, again.body.result], [200, { id: a.id, previousStatus: 'open', status: 'in_review', idempotent: true }], 'the first answer, though the task has moved on');
  t.equal((await call('GET', `/api/admin/field-mapping/review-tasks/${a.id}`)).body.status, 'approved', 'the replay changed nothing');
  const other = await call('POST', path(a.id), { status: 'in_review' }, h);
  t.same([other.status, other.body.error], [409, 'conflict'], 'omitting assignedTo is another body');
});

t.test('errors and lists', async (t) => {
  t.same((await call('POST', path('rvt_nope'), { status: 'approved' })).body.error, 'not_found');
  t.equal((await call('GET', '/api/admin/field-mapping/review-tasks/rvt_nope')).status, 404);
  const bad = await call('POST', path((await task()).id), { status: 'done' });
  t.same([bad.status, bad.body.error, Object.keys(bad.body.details)], [422, 'validation_error', ['status']]);
  const open = await call('GET', '/api/admin/field-mapping/review-tasks?status=open&limit=2');
  t.equal(open.status, 200);
  t.equal(open.body.items.length, 2);
  t.ok(open.body.cursor);
  const next = await call('GET', `/api/admin/field-mapping/review-tasks?status=open&limit=2&cursor=${open.body.cursor}`);
  t.notOk(next.body.items.some((x: any) => open.body.items.some((y: any) => y.id === x.id)), 'pages do not overlap');
  t.ok(next.body.items.every((x: any) => x.status === 'open'));
  const bob = await call('GET', '/api/admin/field-mapping/review-tasks?assigned_to=alice&task_type=import_warning');
  t.same(bob.body.items.map((x: any) => x.assigned_to), ['alice']);
  const { call: other } = await adminOf(srv, ['admin:*'], 'fmrev-other');
  t.equal((await other('GET', '/api/admin/field-mapping/review-tasks')).body.items.length, 0, 'another tenant sees none');
  const audit = await call('GET', '/api/admin/admin-audit-log?resource_type=review_task&limit=5');
  t.ok(audit.body.items.length > 0 && audit.body.items.every((e: any) => e.action === 'review_task.transition'));
});
