import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { adminOf } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { logEnv } from './fixtures.js';

// Issue 29 item 9: the catalog records where each object was written and reads it from there. Chunks
// written before a filesystem destination's directory changed still download and rewrap; a destination
// holding chunks is only deleted with its chunks moved (to the next store, or one named), and moved
// chunks download and rewrap. Real log worker processes, everything through the admin API.
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
const env = await logEnv();
const { srv, sql } = env;
const root = env.ENV.LOG_ARCHIVE_DIR;
const A = await adminOf(srv, ['admin:*'], 'logmove');
await env.child();

const committed = () => sql<any[]>`select * from log_chunks where tenant_id = ${A.tenantId} and status = 'committed' order by created_at, id`;
const settled = async () => Number((await sql`select count(*)::int as n from log_records where tenant_id = ${A.tenantId}`)[0]!.n) === 0;
const lines = (text: string) => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
/** Admin mutations: each writes an audit entry, archived as an admin_audit record. */
const traffic = async (t: Subtest, n: number) => {
  for (let i = 0; i < n; i++) t.equal((await A.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: i % 2 === 0 })).status, 200);
};
const download = async (id: string) => {
  const res = await fetch(`${srv.url}/api/admin/admin-logging/chunks/${id}/download`, { headers: { authorization: `Bearer ${A.token}` } });
  return { status: res.status, text: await res.text(), sha: res.headers.get('x-chunk-sha256') };
};
async function downloadsAll(t: Subtest, chunks: any[], what: string): Promise<void> {
  for (const c of chunks) {
    const d = await download(c.id);
    t.equal(d.status, 200, `${what}: chunk ${c.id} downloads`);
    if (d.status !== 200) continue;
    t.equal(d.sha, c.sha256, 'its plaintext is the catalog\'s');
    t.equal(lines(d.text).length, c.record_count);
  }
}
/** Rotates the admin audit key and rewraps every chunk on the old version; answers the jobs once each is succeeded or failed. */
async function rotateAndRewrap(t: Subtest): Promise<any[]> {
  const reg = (await A.call('GET', '/api/admin/admin-logging/key-registries')).body.items.find((r: any) => r.log_type === 'admin_audit' && r.plane === 'control');
  t.equal((await A.call('POST', `/api/admin/admin-logging/key-registries/${reg.id}/rotate`)).status, 200);
  const batches: string[] = [];
  for (;;) {
    const r = await A.call('POST', '/api/admin/admin-logging/rewrap-jobs', { key_registry_id: reg.id });
    t.equal(r.status, 200, JSON.stringify(r.body));
    batches.push(r.body.job_id);
    if (r.body.result.candidates_left === 0) break;
  }
  let jobs: any[] = [];
  await waitFor(async () => {
    jobs = (await Promise.all(batches.map(async (b) => (await A.call('GET', `/api/admin/admin-logging/rewrap-jobs/${b}`)).body.jobs))).flat();
    return jobs.every((j) => j.status === 'succeeded' || j.status === 'failed');
  }, 60_000, 200);
  t.ok(jobs.length > 0, `${jobs.length} rewrap jobs`);
  t.same(jobs.filter((j) => j.status !== 'succeeded').map((j) => `${j.chunk_id}: ${j.error}`), [], 'every rewrap job succeeded');
  return jobs;
}

let d1: any;
let written: any[] = [];

t.test('chunks written before a directory change still download, and rewrap where they are', async (t) => {
  const res = await A.call('POST', '/api/admin/destinations', { name: 'disk one', kind: 'filesystem', directory: 'one' });
  t.equal(res.status, 201, JSON.stringify(res.body));
  d1 = res.body.destination;
  await traffic(t, 3);
  await waitFor(async () => (await committed()).some((c) => c.destination_id === d1.id && c.log_type === 'admin_audit') && settled(), 20_000, 100);
  written = (await committed()).filter((c) => c.destination_id === d1.id);
  t.ok(written.length > 0 && written.every((c) => fs.existsSync(path.join(root, 'one', c.object_key))), 'written to directory one');

  const patched = await A.call('PATCH', `/api/admin/destinations/${d1.id}`, { directory: 'two' });
  t.equal(patched.status, 200);
  t.equal(patched.body.directory, 'two');
  await traffic(t, 2);
  await waitFor(async () => (await committed()).some((c) => c.destination_id === d1.id && fs.existsSync(path.join(root, 'two', c.object_key))), 20_000, 100);

  await downloadsAll(t, written, 'after the directory change');
  const listed = (await A.call('GET', '/api/admin/admin-logging/chunks?limit=100')).body.items;
  t.match(listed.find((c: any) => c.id === written[0].id), { destination_id: d1.id, location: 'one' }, 'the catalog shows where the object is');
  t.ok(listed.some((c: any) => c.location === 'two'), 'and new chunks in the new directory');

  await rotateAndRewrap(t);
  const again = (await committed()).filter((c) => written.some((w) => w.id === c.id));
  t.ok(again.every((c) => c.key_version === 2 && fs.existsSync(path.join(root, 'one', c.object_key))), 'rewrapped in the directory they were written to');
  t.ok(again.every((c) => !fs.existsSync(path.join(root, 'one', c.object_key.replace('.v2.', '.v1.')))), 'old objects gone');
  await downloadsAll(t, again, 'after the rewrap');
});

t.test('a destination holding chunks is deleted only with its chunks moved; moved chunks download and rewrap', async (t) => {
  let res = await A.call('DELETE', `/api/admin/destinations/${d1.id}`);
  t.equal(res.status, 409, 'it holds chunks');
  t.equal(res.body.error, 'conflict');
  t.match(res.body.error_description, /move_chunks=true/);
  t.equal((await A.call('GET', `/api/admin/destinations/${d1.id}`)).status, 200, 'still there');
  const [refused] = await sql<any[]>`select result from admin_audit_log where tenant_id = ${A.tenantId} and action = 'log_destination.delete' order by created_at desc limit 1`;
  t.equal(refused?.result, 'failure', 'the refusal is audited');
  t.equal((await A.call('DELETE', `/api/admin/destinations/${d1.id}?move_to=${d1.id}`)).status, 422, 'move_to without move_chunks');
  t.equal((await A.call('DELETE', `/api/admin/destinations/${d1.id}?move_chunks=true&move_to=ldst_nope`)).status, 422, 'move_to must name a filesystem destination');
  t.equal((await A.call('DELETE', `/api/admin/destinations/${d1.id}?move_chunks=maybe`)).status, 422);

  res = await A.call('POST', '/api/admin/destinations', { name: 'disk three', kind: 'filesystem', directory: 'three' });
  t.equal(res.status, 201);
  const d2 = res.body.destination;
  const held = (await committed()).filter((c) => c.destination_id === d1.id);
  t.ok(held.length > written.length, `${held.length} chunks held, in directories one and two`);

  res = await A.call('DELETE', `/api/admin/destinations/${d1.id}?move_chunks=true`);
  t.equal(res.status, 204, JSON.stringify(res.body));
  t.equal((await A.call('GET', `/api/admin/destinations/${d1.id}`)).status, 404);
  const now = await committed();
  t.equal(now.filter((c) => c.destination_id === d1.id).length, 0, 'no chunk names the deleted destination');
  const moved = now.filter((c) => held.some((h) => h.id === c.id));
  t.equal(moved.length, held.length);
  t.ok(moved.every((c) => c.destination_id === d2.id && c.object_dir === 'three' && fs.existsSync(path.join(root, 'three', c.object_key))), 'moved to the next filesystem destination');
  t.ok(held.every((h) => !fs.existsSync(path.join(root, h.object_dir, h.object_key))), 'and gone from where they were');
  const [entry] = await sql<any[]>`select metadata from admin_audit_log where tenant_id = ${A.tenantId} and action = 'log_destination.delete' and result = 'success'`;
  t.ok(entry.metadata.chunks_moved >= held.length, `audited: ${entry.metadata.chunks_moved} chunks moved`);
  await downloadsAll(t, moved, 'after the move');

  await traffic(t, 1);
  await rotateAndRewrap(t);
  const rewrapped = (await committed()).filter((c) => held.some((h) => h.id === c.id));
  t.ok(rewrapped.every((c) => c.key_version === 3 && c.object_dir === 'three' && fs.existsSync(path.join(root, 'three', c.object_key))), 'moved chunks rewrapped where they are now');
  await downloadsAll(t, rewrapped, 'after the move and rewrap');

  // The last filesystem destination: its chunks go to the default directory.
  const onD2 = (await committed()).filter((c) => c.destination_id === d2.id);
  res = await A.call('DELETE', `/api/admin/destinations/${d2.id}?move_chunks=true`);
  t.equal(res.status, 204, JSON.stringify(res.body));
  const toDefault = (await committed()).filter((c) => onD2.some((h) => h.id === c.id));
  t.ok(toDefault.length > 0 && toDefault.every((c) => c.destination_id === null && c.object_dir === 'default' && fs.existsSync(path.join(root, 'default', c.object_key))), 'moved to the default directory');
  await downloadsAll(t, toDefault, 'in the default directory');
});
