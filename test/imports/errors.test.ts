import t from 'tap';
import { waitFor } from '../helpers/processes.js';
import { HEADER, importEnv, mapping } from './fixtures.js';

// What an operator gets wrong: unknown jobs, cancelling, mappings that name no user field, headers without the mapped columns.
const env = await importEnv('imperr');
const { call, users, job } = env;
let worker: { close(): Promise<void> } | undefined;

t.test('errors: unknown job, cancel, bad mapping, bad header', async (t) => {
  worker = await env.worker();
  t.same((await call('GET', '/api/admin/user-imports/imp_nope')).body.error, 'job_not_found');
  t.same((await call('POST', '/api/admin/user-imports/imp_nope/cancel')).status, 404);
  const bad = await call('POST', '/api/admin/user-imports', { mapping: { ...mapping, catalog: { entries: [{ ...mapping.catalog.entries[0]!, path: 'password' }] } }, csv: 'E-Mail\nx@y.z\n' });
  t.equal(bad.status, 422);
  t.match(bad.body.details, { 'mapping.catalog.entries.0.path': ['must be email, name, email_verified or metadata.<key>'] });
  const header = await call('POST', '/api/admin/user-imports', { mapping, csv: 'Mail,Name\nx@y.z,X\n' });
  t.same([header.status, header.body.error], [422, 'import_failed']);
  t.match(header.body.error_description, /lacks the columns: E-Mail, First/);
  // A job cancelled before the worker takes it is never run.
  await worker!.close();
  worker = undefined;
  const q = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\ncancel.me@example.org,C,M,,yes,red\n` });
  const c = await call('POST', `/api/admin/user-imports/${q.body.id}/cancel`);
  t.same([c.status, c.body.status], [200, 'cancelled']);
  const c2 = await call('POST', `/api/admin/user-imports/${q.body.id}/cancel`);
  t.same([c2.status, c2.body.error], [400, 'job_cancelled']);
  worker = await env.worker();
  const probe = await call('POST', '/api/admin/user-imports', { mapping, csv: `${HEADER}\nprobe@example.org,P,R,,yes,red\n` });
  await waitFor(async () => (await job(probe.body.id)).status === 'succeeded', 30_000);
  t.equal((await job(q.body.id)).status, 'cancelled');
  t.equal(await users.getByEmail('cancel.me@example.org'), null, 'the cancelled job created nobody');
  const done = await call('POST', `/api/admin/user-imports/${probe.body.id}/cancel`);
  t.same([done.status, done.body.error], [409, 'conflict']);
  // A file that does not parse is refused before a job exists (test/imports/refusals.test.ts).
});
