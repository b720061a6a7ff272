import t from 'tap';
import { waitFor } from '../helpers/processes.js';
import { bigCsv, importEnv, mapping } from './fixtures.js';

// 20,000 rows through a real jobs worker killed mid-import (SIGKILL of its process): the job is taken
// up again after its lock lapses and resumes at its checkpoint, with no duplicate users, events or
// review tasks; then review tasks of the import are approved and rejected.
const env = await importEnv('imports');
const { tenantId, call, sql, users, job } = env;
const N = 20_000;
const rejectedRows = N / 400;
const warnedRows = N / 100;


t.test('20,000 rows through a worker killed mid-import: resumes without duplicates', async (t) => {
  for (let i = 0; i < 50; i++) {
    await users.insert({ email: `bulk.${i}@example.org`, name: i < 10 ? `Someone Else ${i}` : i < 20 ? null : `Person${i} Bulk`, emailVerified: true, metadata: { team: 'red' } });
  }
  const before = Number((await sql`select count(*)::int as n from event_outbox where tenant_id = ${tenantId} and event = 'user.created'`)[0]!.n);
  const child = await env.child();
  const started = Date.now();
  const res = await call('POST', '/api/admin/user-imports', { mapping, csv: bigCsv(N) });
  t.equal(res.status, 202, JSON.stringify(res.body).slice(0, 300));
  t.match(res.body, { kind: 'import', status: 'queued', processed_rows: 0 });
  const id = res.body.id;
  await waitFor(async () => { const j = await job(id); return j.status === 'running' && j.processed_rows >= 2000; }, 60_000, 20);
  await new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
  const atKill = await job(id);
  t.ok(atKill.processed_rows > 0 && atKill.processed_rows < N, `killed at row ${atKill.processed_rows}`);
  t.equal(atKill.status, 'running');
  t.equal(atKill.total_rows, N, 'the row count is known before the first batch');
  t.ok(atKill.progress > 0 && atKill.progress < 1, `progress ${atKill.progress}`);

  await env.worker();
  await waitFor(async () => (await job(id)).status === 'succeeded', 90_000, 100);
  const done = await job(id);
  const secs = (Date.now() - started) / 1000;
  t.comment(`import of ${N} rows took ${secs.toFixed(1)} s including the kill and the 2 s lock lapse (${Math.round(N / secs)} rows/s)`);
  const newUsers = N - rejectedRows - warnedRows - 50;
  t.same(done.counts, { created: newUsers, updated: 10, unchanged: 30, rejected: rejectedRows, review: warnedRows + 10 });
  t.same([done.processed_rows, done.total_rows, done.progress, done.error], [N, N, 1, null]);
  t.equal(Number((await sql`select count(*)::int as n from user_import_rows where tenant_id = ${tenantId} and job_id = ${id}`)[0]!.n), N, 'one outcome per row');
  t.equal(Number((await sql`select count(*)::int as n from users where tenant_id = ${tenantId}`)[0]!.n), newUsers + 50, 'no duplicate users');
  const created = Number((await sql`select count(*)::int as n from event_outbox where tenant_id = ${tenantId} and event = 'user.created'`)[0]!.n) - before;
  t.equal(created, newUsers, 'one user.created per new user, none repeated');
  t.equal(Number((await sql`select count(*)::int as n from event_outbox where tenant_id = ${tenantId} and event = 'user.updated'`)[0]!.n), 10);
  t.equal(Number((await sql`select count(*)::int as n from review_tasks where tenant_id = ${tenantId} and job_id = ${id}`)[0]!.n), warnedRows + 10, 'one review task per doubtful row');
  const u = await users.getByEmail('bulk.1000@example.org');
  t.match(u, { email: 'bulk.1000@example.org', name: 'Person1000 Bulk', email_verified: true, metadata: { team: 'red' } });
  t.equal((await users.getByEmail('bulk.15@example.org'))?.name, 'Person15 Bulk', 'a missing name was filled in');
  t.equal((await users.getByEmail('bulk.5@example.org'))?.name, 'Someone Else 5', 'a conflicting name waits for review');

  const rej = await call('GET', `/api/admin/user-imports/${id}/rejections?limit=2`);
  t.same(rej.body.items, [
    { row_index: 399, reasons: [{ code: 'invalid_email', severity: 'error', targetRef: 'email' }, { code: 'required_missing', severity: 'error', targetRef: 'email' }] },
    { row_index: 799, reasons: [{ code: 'invalid_email', severity: 'error', targetRef: 'email' }, { code: 'required_missing', severity: 'error', targetRef: 'email' }] },
  ]);
  t.notMatch(JSON.stringify(rej.body), /broken-/, 'reasons, never values');

  // Review: approve a conflict (the name is overwritten, user.updated), reject another, approve a warning (user.created).
  const conflicts = (await call('GET', `/api/admin/field-mapping/review-tasks?job_id=${id}&task_type=import_conflict&limit=100`)).body.items;
  t.equal(conflicts.length, 10);
  const c5 = conflicts.find((x: any) => x.row_index === 5);
  const c6 = conflicts.find((x: any) => x.row_index === 6);
  t.match(c5, { status: 'open', reason_codes: ['conflicts_with_existing_user'], pending_fields: ['email', 'email_verified', 'metadata', 'name'] });
  t.equal((await call('POST', `/api/admin/field-mapping/review-tasks/${c5.id}/transition`, { status: 'approved' })).status, 200);
  t.equal((await users.getByEmail('bulk.5@example.org'))?.name, 'Person5 Bulk');
  t.equal((await call('POST', `/api/admin/field-mapping/review-tasks/${c6.id}/transition`, { status: 'rejected' })).status, 200);
  t.equal((await users.getByEmail('bulk.6@example.org'))?.name, 'Someone Else 6');
  const warn = (await call('GET', `/api/admin/field-mapping/review-tasks?job_id=${id}&task_type=import_warning&limit=1`)).body.items[0];
  t.same(warn.reason_codes, ['required_missing']);
  t.equal(await users.getByEmail(`bulk.${warn.row_index}@example.org`), null);
  t.equal((await call('POST', `/api/admin/field-mapping/review-tasks/${warn.id}/transition`, { status: 'approved' })).status, 200);
  t.match(await users.getByEmail(`bulk.${warn.row_index}@example.org`), { name: null, email_verified: true });
});

