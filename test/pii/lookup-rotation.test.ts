import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { closeLogin } from '../../src/login/index.js';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { initialLookupKey, blindIndex } from '../../src/pii/blind-index.js';
import { loadKey } from '../../src/pii/lookup-keys/key-material.js';
import { lookupHmacRepo } from '../../src/pii/lookup-keys/repository.js';
import { acquireLease, indexBatch, type WorkDeps } from '../../src/pii/lookup-keys/work.js';
import { migrate } from '../../src/store/migrate.js';
import { startEmailWorker } from '../../workers/email-worker.js';
import { startJobsWorker, type RunningJobsWorker } from '../../workers/jobs-worker.js';
import { adminOf, events } from '../admin/helpers.js';
import { tempDatabase } from '../helpers/db.js';
import { forkReady, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { codeFor } from '../login/fixtures.js';

// Issue 14 item 5: the lookup-HMAC key rotation, environment-wide, so this file has a database of its own
// (and a partition in a second one). 10,000 users; a full rotation driven state by state with admin lookups
// by email and logins checked in every state, the reindex worker killed mid-way and replaced, a stale
// fencing token refused; then a rotation whose verification keeps failing (blocked at the third failure,
// rolled back), an abort, platform-only access and operationId validation.
const main = await tempDatabase();
const farDb = await tempDatabase();
t.teardown(async () => { await main.drop(); await farDb.drop(); });
await migrate(main.sql);
const sink = await startSmtpSink();
t.teardown(() => sink.close());
const ENV = {
  DATABASE_URL: main.url, PII_PARTITIONS: 'eu,far', PII_DATABASE_URL_FAR: farDb.url, SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
  LOOKUP_KEYRING_REFRESH_MS: '100', LOOKUP_KEYRING_LIVE_MS: '6000', LOOKUP_REINDEX_BATCH: '50', LOOKUP_REINDEX_LEASE_MS: '1500',
  USER_JOB_LOCK_MS: '2000', PLUGIN_HEALTH_INTERVAL_MS: '60000',
};
const srv = await startTestServer(ENV);
const mailer = await startEmailWorker(srv.config, createLogger('silent'));
const workers = new Set<RunningJobsWorker>();
const children = new Set<ChildProcess>();
t.teardown(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const w of workers) await w.close();
  await mailer.close(); await srv.close(); await closeLogin(srv.deps);
});
const sql = srv.deps.sql;
const admin = await adminOf(srv, ['admin:*'], 'rot');
const platform = await adminOf(srv, ['admin:*'], 'rot-platform', true);
const P = '/api/admin/platform/control-plane/lookup-hmac/rotations';
const tag = Math.random().toString(36).slice(2, 8);
// 2,000 users in `npm test`, 10,000 in `npm run test:long` (TEST_LONG); the rotation's states, batches and
// partitions are the same (LOOKUP_REINDEX_BATCH 50: forty batches per pass, the kill lands mid-way).
const N = process.env.TEST_LONG ? 10_000 : 2_000;
// Seeding and rotating N users under a loaded 2-core CI machine once took longer than tap's 120 s.
t.setTimeout(300_000);

const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/jobs-worker.js');
/** A jobs worker in a child process (so it can be SIGKILLed), on this file's database and Redis prefix. */
function childWorker(): Promise<ChildProcess> {
  const c = srv.config;
  const env = { ...process.env, ...ENV, NODE_ENV: 'test', LOG_LEVEL: 'silent', REDIS_PREFIX: c.redisPrefix, REDIS_URL: c.redisUrl, QUEUE_REDIS_URL: c.queueRedisUrl };
  return forkReady(workerFile, env, children);
}
async function inProcessWorker(): Promise<void> {
  workers.add(await startJobsWorker(srv.config, createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', { role: 'jobs' })));
}
/** Waits for a rotation to satisfy `ok`; on timeout the failure shows where it stood. */
async function until(id: string, ok: (r: any) => boolean, ms: number): Promise<any> {
  let last: any;
  try {
    await waitFor(async () => { last = await rotation(id); return ok(last); }, ms, 50);
  } catch { throw new Error(`rotation ${id} did not get there in ${ms} ms; it stands at ${JSON.stringify(last)}`); }
  return last;
}

const rotation = async (id: string) => (await platform.call('GET', `${P}/${encodeURIComponent(id)}`)).body.rotation;
/** Advances once every process applies the current state (409 until then). */
async function advance(id: string, body: Record<string, unknown> = {}): Promise<any> {
  let res: { status: number; body: any } | undefined;
  await waitFor(async () => { res = await platform.call('POST', `${P}/${id}/advance`, body); return res.status !== 409; }, 30_000, 50);
  if (res!.status !== 200) throw new Error(`advance answered ${res!.status}: ${JSON.stringify(res!.body)}`);
  return res!.body.rotation;
}

// --- users: 10,000 across a schema partition, a separate-database partition and the default ---
const users = srv.deps.store.forTenant(admin.tenantId).users;
await admin.call('PUT', '/api/admin/settings/pii-partitions', { policy_partition: null, use_residence: true, rules: [] });
const email = (i: number) => `bulk-${tag}-${i}@example.test`;
for (let b = 0; b < N; b += 1000) {
  await users.insertMany(Array.from({ length: 1000 }, (_, k) => {
    const i = b + k;
    return { email: email(i), name: `Bulk ${i}`, metadata: { residence: i % 3 === 0 ? 'eu' : i % 3 === 1 ? 'far' : 'default' } };
  }));
}
const web = (await sql<{ client_id: string }[]>`select client_id from clients where tenant_id = ${admin.tenantId} and name ilike '%web%' limit 1`)[0]!;
/** The email-code login: the address is looked up by its blind index; answers the user id. */
async function login(address: string): Promise<string> {
  const before = sink.messages.filter((m) => m.to.includes(address.toLowerCase())).length;
  let res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: address, client_id: web.client_id }) });
  if (res.status !== 200) throw new Error(`generate answered ${res.status}`);
  const code = await codeFor(sink, address, before);
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: address, code }) });
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { sub: string }).sub;
}
/** Users to find in every state: some of the bulk (every partition) and one created in each state so far. */
const tracked = new Map<string, string>();
for (const i of [0, 1, 2, N / 2 - 1, N / 2, N / 2 + 1, N - 3, N - 2, N - 1]) tracked.set(email(i), (await users.getByEmail(email(i)))!.id);
const states: string[] = [];
const count = async (q: Promise<{ n: number }[]>): Promise<number> => Number((await q)[0]!.n);

/** In the rotation's current state: every tracked user found by exact email, a login of an old and the last new user, a new user created. */
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
/** `avoid`: users not to log in (rows a held verification batch has locked). */
async function checkState(t: Subtest, label: string, avoid: ReadonlySet<string> = new Set()): Promise<void> {
  states.push(label);
  for (const [address, id] of tracked) {
    const found = await admin.call('GET', `/api/admin/users?email=${encodeURIComponent(address.toUpperCase())}`);
    t.same(found.body.items?.map((u: { id: string }) => u.id), [id], `${label}: ${address} found by email`);
  }
  const logins = [...tracked].filter(([, id]) => !avoid.has(id));
  for (const [address, id] of [logins[states.length % logins.length]!, logins[logins.length - 1]!]) {
    t.equal(await login(address), id, `${label}: login of ${address} finds the same user`);
  }
  const fresh = `made-in-${label}-${tag}@example.test`;
  const made = await admin.call('POST', '/api/admin/users', { email: fresh, name: label, metadata: { residence: states.length % 2 ? 'far' : 'eu' } });
  t.equal(made.status, 201, `${label}: a user created`);
  const dup = await admin.call('POST', '/api/admin/users', { email: fresh.toUpperCase() });
  t.equal(dup.status, 409, `${label}: the new address is taken at once`);
  tracked.set(fresh, made.body.id);
}

t.test('access: platform administrators only; operationId validated', async (t) => {
  t.equal((await admin.call('GET', `${P}/anything`)).status, 403, 'a tenant administrator may not read');
  t.equal((await admin.call('POST', P, { operationId: 'x1' })).status, 403, 'nor start');
  for (const bad of ['-leading-dash', 'a'.repeat(129), 'sp%20ace', 'sl%2Fash', '%C3%A9t%C3%A9']) {
    const r = await platform.call('GET', `${P}/${bad}`);
    t.equal(r.status, 422, `operationId ${bad.slice(0, 20)} is 422`);
    t.equal(r.body.error, 'validation_error');
  }
  t.equal((await platform.call('GET', `${P}/${'a'.repeat(128)}`)).status, 404, '128 characters are valid (and unknown)');
  t.equal((await platform.call('GET', `${P}/ok.id:with-all_chars`)).status, 404);
  const badStart = await platform.call('POST', P, { operationId: '.dot-first' });
  t.equal(badStart.status, 422);
  t.ok(badStart.body.details?.operationId, 'details name the field');
  t.equal((await platform.call('POST', P, { operationId: 'ok', extra: true })).status, 422, 'unknown fields are refused');
});

const OP = `rot-1:${tag}.a`;
let candidateKeyHex = '';

t.test('a full rotation of 10,000 users, state by state', async (t) => {
  const started = await platform.call('POST', P, { operationId: OP, graceSeconds: 3600 });
  t.equal(started.status, 201);
  const r0 = started.body.rotation;
  const initial = initialLookupKey(srv.config.keyEncryptionKey);
  t.match(r0, { operationId: OP, state: 'planned', source: { generation: 1, slot: 'A', fingerprint: initial.fingerprint }, candidate: { generation: 2, slot: 'B' },
    verificationAttemptCount: 0, mutationStarted: false, sourceRowCount: null, currentRowCount: null, graceExpiresAt: null, fencingToken: 1 });
  t.match(r0.candidate.fingerprint, /^[a-f0-9]{64}$/);
  const candidate = loadKey((await lookupHmacRepo.key(sql, 2))!, srv.config.keyEncryptionKey);
  candidateKeyHex = candidate.key.toString('hex');
  t.equal(candidate.fingerprint, r0.candidate.fingerprint, 'the fingerprint is the sha256 of the material');
  t.notOk(JSON.stringify(started.body).includes(candidateKeyHex) || JSON.stringify(started.body).includes(initial.key.toString('hex')), 'no key material in the answer');
  const again = await platform.call('POST', P, { operationId: OP });
  t.equal(again.status, 200, 'the same operationId again answers the rotation');
  t.equal(again.body.rotation.candidate.fingerprint, r0.candidate.fingerprint);
  const second = await platform.call('POST', P, { operationId: `other-${tag}` });
  t.equal(second.status, 409, 'one live rotation per environment');

  await checkState(t, 'planned');

  t.equal((await advance(OP)).state, 'distributing');
  const comps = (await rotation(OP)).components;
  t.ok(comps.length >= 1, 'the processes report');
  t.ok(comps.every((c: { fingerprints: string[] }) => c.fingerprints.includes(r0.candidate.fingerprint)), 'every process holds the candidate');
  await checkState(t, 'distributing');

  const dw = await advance(OP);
  t.match(dw, { state: 'activation_dual_write', mutationStarted: true });
  await checkState(t, 'activation_dual_write');
  const dualUser = tracked.get(`made-in-activation_dual_write-${tag}@example.test`)!;
  t.same((await sql<{ generation: number }[]>`select generation from user_email_index where user_id = ${dualUser} order by generation`).map((r) => r.generation), [1, 2],
    'a user created under dual write has entries under both keys');
  const plannedUser = tracked.get(`made-in-planned-${tag}@example.test`)!;
  t.same((await sql<{ generation: number }[]>`select generation from user_email_index where user_id = ${plannedUser}`).map((r) => r.generation), [1], 'one created before, under the source key only');

  const dr = await advance(OP);
  t.equal(dr.state, 'dual_read');
  const total = await count(sql<{ n: number }[]>`select count(*)::int as n from users`);
  t.equal(dr.sourceRowCount, total, 'the inventory: every user at the cutoff');
  t.ok(dr.sourceRowCount >= N);
  t.type(dr.cutoff, 'number');
  await checkState(t, 'dual_read');
  const readUser = tracked.get(`made-in-dual_read-${tag}@example.test`)!;
  t.same((await sql<{ generation: number }[]>`select generation from user_email_index where user_id = ${readUser}`).map((r) => r.generation), [2], 'under dual read, new entries are under the candidate key only');

  // Reindexing: a worker in a child process, killed mid-way; logins meanwhile; a new worker resumes.
  const child = await childWorker();
  t.equal((await advance(OP)).state, 'reindexing');
  await waitFor(async () => { const r = await rotation(OP); return r.state === 'reindexing' && r.checkpoint.processed >= 1000; }, 60_000, 20);
  await new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
  const atKill = await rotation(OP);
  t.equal(atKill.state, 'reindexing');
  t.ok(atKill.checkpoint.processed > 0 && atKill.checkpoint.processed < atKill.sourceRowCount, `killed at ${atKill.checkpoint.processed} of ${atKill.sourceRowCount}`);
  t.ok(atKill.ownerId && atKill.leaseExpiresAt, 'the dead worker still holds its lease');
  t.ok(JSON.stringify(atKill.checkpoint).length <= 4096);
  await checkState(t, 'reindexing');
  const tokenBefore = atKill.fencingToken;
  await inProcessWorker();

  // Verifying: hold the walk at the last user (a row lock) so the state can be checked while it lasts.
  await until(OP, (r) => r.state !== 'reindexing', 90_000);
  const top = await sql<{ id: string }[]>`select id from users order by id desc limit 200`;
  const held = await sql.reserve();
  await held`begin`;
  await held`select id from users where id = ${top[0]!.id} for update`;
  const v = await rotation(OP);
  if (v.state === 'verifying') {
    t.ok(v.fencingToken > tokenBefore, `the new worker took the lease with a higher fencing token (${tokenBefore} -> ${v.fencingToken})`);
    t.equal(v.checkpoint.reindexed, v.sourceRowCount, 'every row of the inventory reindexed exactly once across the kill');
    await checkState(t, 'verifying', new Set(top.map((r) => r.id)));
  } else {
    t.fail(`the verification was not observed (state ${v.state})`);
  }
  await held`rollback`;
  held.release();

  await until(OP, (r) => r.state === 'grace', 60_000);
  const g = await rotation(OP);
  const now = await count(sql<{ n: number }[]>`select count(*)::int as n from users`);
  t.match(g, { state: 'grace', verificationAttemptCount: 1, ownerId: null, leaseExpiresAt: null });
  t.equal(g.checkpoint.reindexed, g.sourceRowCount);
  t.equal(g.checkpoint.mismatches, 0);
  t.ok(g.currentRowCount >= now - 1, `every user verified under the candidate key (${g.currentRowCount} of ${now})`);
  t.ok(g.graceExpiresAt > Date.now() + 3000_000, 'grace runs for the configured hour');
  await checkState(t, 'grace');

  await t.test('a stale fencing token is refused and changes nothing', async (t) => {
    const d: WorkDeps = { sql, vault: srv.deps.store.pii, redis: srv.deps.redis, kek: srv.config.keyEncryptionKey, log: createLogger('silent'),
      ownerId: 'test-a', leaseMs: 60_000, batch: 50, liveMs: 6000 };
    const a = await acquireLease(sql, OP, 'test-a', 60_000);
    t.ok(a !== null);
    t.equal(await acquireLease(sql, OP, 'test-b', 60_000), null, 'a live lease is not taken over');
    await sql`update lookup_hmac_rotations set lease_expires_at = now_ms() - 1 where operation_id = ${OP}`;
    const b = await acquireLease(sql, OP, 'test-b', 60_000);
    t.equal(b, a! + 1, 'a lapsed lease is taken with the next fencing token');
    const before = await sql`select checkpoint, updated_at from lookup_hmac_rotations where operation_id = ${OP}`;
    const entries = await count(sql<{ n: number }[]>`select count(*)::int as n from user_email_index`);
    // A checkpoint just before one user, whose candidate entry is removed: a batch from there writes it again.
    // Of the tracked bulk users (all before the cutoff), the one with the lowest id, so a full batch
    // follows it (ids are random: email(0)'s user can sit among the last 50, whose batch is the last).
    const bulk = [...tracked].filter(([address]) => address.startsWith(`bulk-${tag}-`)).map(([, id]) => id);
    const uid = (await sql<{ id: string }[]>`select id from users where id = any(${bulk}) order by id limit 1`)[0]!.id;
    const prev = (await sql<{ prev: string | null }[]>`select max(id) as prev from users where id < ${uid}`)[0]!.prev;
    await sql`update lookup_hmac_rotations set checkpoint = ${sql.json({ phase: 'reindex', cursor: prev, processed: 0 })} where operation_id = ${OP}`;
    const planted = await sql`select checkpoint from lookup_hmac_rotations where operation_id = ${OP}`;
    await sql`delete from user_email_index where user_id = ${uid} and generation = 2`;
    await t.rejects(indexBatch(d, OP, a!, 'candidate'), { name: 'StaleFencingToken' }, 'the old owner\'s write is refused');
    const after = await count(sql<{ n: number }[]>`select count(*)::int as n from user_email_index`);
    t.equal(after, entries - 1, 'no entry written by the stale owner');
    t.same((await sql`select checkpoint from lookup_hmac_rotations where operation_id = ${OP}`)[0]!.checkpoint, planted[0]!.checkpoint, 'its checkpoint untouched');
    t.equal(await indexBatch({ ...d, ownerId: 'test-b' }, OP, b!, 'candidate'), false, 'the current owner may write');
    const restored = await count(sql<{ n: number }[]>`select count(*)::int as n from user_email_index where user_id = ${uid} and generation = 2`);
    t.equal(restored, 1, 'its batch restored the entry');
    await sql`update lookup_hmac_rotations set checkpoint = ${sql.json(before[0]!.checkpoint)}, owner_id = null, lease_expires_at = null where operation_id = ${OP}`;
  });

  const early2 = await platform.call('POST', `${P}/${OP}/advance`, {});
  t.equal(early2.status, 409, 'grace is not over');
  const done = await advance(OP, { endGraceEarly: true });
  t.equal(done.state, 'complete');
  await until(OP, (r) => r.finished === true, 60_000);
  const c = await rotation(OP);
  t.match(c, { state: 'complete', finished: true, ownerId: null });
  const old = await count(sql<{ n: number }[]>`select count(*)::int as n from user_email_index where generation = 1`);
  t.equal(old, 0, 'the old key\'s entries are gone');
  const keys = await sql<{ generation: number; status: string; sealed: Buffer | null }[]>`select generation, status, sealed from lookup_hmac_keys order by generation`;
  t.same(keys.map((k) => [k.generation, k.status]), [[1, 'retired'], [2, 'current']]);
  await checkState(t, 'complete');

  const moves = (await events(srv, platform.tenantId)).filter((e) => e.event === 'control_plane.lookup_hmac_rotation' && e.data.operation_id === OP);
  t.same(moves.map((e) => e.data.to), ['planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete', 'complete'], 'an event per move (the last: finished)');
  t.equal(moves[moves.length - 1]!.data.finished, true);
  const audits = await sql<{ action: string; result: string }[]>`select action, result from admin_audit_log where tenant_id = ${platform.tenantId} and resource_id = ${OP} order by created_at`;
  t.same(audits.filter((a) => a.result === 'success').map((a) => a.action), ['lookup_hmac_rotation.start', ...Array(5).fill('lookup_hmac_rotation.advance')], 'start and each advance audited');
  t.ok(audits.some((a) => a.result === 'failure'), 'a refused advance is audited as a failure');
  t.same(states, ['planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete'], 'checked in every state');
});

t.test('a verification that keeps failing blocks the rotation at the third failure and rolls back', async (t) => {
  const op = `rot-2-${tag}`;
  const s = await platform.call('POST', P, { operationId: op, graceSeconds: 60 });
  t.equal(s.status, 201);
  t.match(s.body.rotation, { source: { generation: 2, slot: 'B' }, candidate: { generation: 3, slot: 'A' } });
  await advance(op); await advance(op); await advance(op);
  // Written under the candidate key alone (dual_read): must stay findable after the rollback.
  const late = `late-${tag}@example.test`;
  const made = await admin.call('POST', '/api/admin/users', { email: late });
  t.equal(made.status, 201);
  // A corrupt entry: another user holds the candidate index of a bulk user's address. The reindex must not overwrite it.
  const victim = email(7);
  const key3 = loadKey((await lookupHmacRepo.key(sql, 3))!, srv.config.keyEncryptionKey);
  await sql`insert into user_email_index (tenant_id, generation, bidx, user_id) values (${admin.tenantId}, 3, ${blindIndex(key3.key, victim)}, ${tracked.get(email(0))!})`;
  t.equal((await advance(op)).state, 'reindexing');
  await until(op, (r) => r.finished === true, 120_000);
  const r = await rotation(op);
  t.match(r, { state: 'blocked', verificationAttemptCount: 3, finished: true });
  t.match(r.blockedReason, /verification failed 3 times \(1 of \d+ users/);
  const moves = (await events(srv, platform.tenantId)).filter((e) => e.event === 'control_plane.lookup_hmac_rotation' && e.data.operation_id === op).map((e) => e.data.to);
  t.same(moves, ['planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'reindexing', 'verifying', 'reindexing', 'verifying', 'blocked', 'blocked']);
  const gen3 = await count(sql<{ n: number }[]>`select count(*)::int as n from user_email_index where generation = 3`);
  t.equal(gen3, 0, 'the candidate\'s entries are dropped');
  const [k3] = await sql<{ status: string; sealed: Buffer | null }[]>`select status, sealed from lookup_hmac_keys where generation = 3`;
  t.match(k3, { status: 'retired', sealed: null }, 'the candidate key material is erased');
  tracked.set(late, made.body.id);
  await checkState(t, 'after-blocked');
  const missing = await count(sql<{ n: number }[]>`select count(*)::int as n from users u where not exists (select 1 from user_email_index i where i.user_id = u.id and i.generation = 2)`);
  t.equal(missing, 0, 'every user has an entry under the current key again');
});

t.test('abort: before the index changed, blocked at once; the slot is free again', async (t) => {
  const op = `rot-3-${tag}`;
  t.equal((await platform.call('POST', P, { operationId: op })).status, 201);
  const a = await platform.call('POST', `${P}/${op}/abort`, { reason: 'testing abort' });
  t.equal(a.status, 200);
  t.match(a.body.rotation, { state: 'blocked', finished: true, blockedReason: 'testing abort', mutationStarted: false });
  t.equal((await platform.call('POST', `${P}/${op}/abort`, {})).status, 409, 'blocked is terminal');
  t.equal((await platform.call('POST', `${P}/${op}/advance`, {})).status, 409);
  const next = await platform.call('POST', P, { operationId: `rot-4-${tag}` });
  t.equal(next.status, 201, 'a new rotation may start');
  t.match(next.body.rotation, { source: { generation: 2 }, candidate: { generation: 5 } }, 'generations are never reused');
  await advance(`rot-4-${tag}`);
  await advance(`rot-4-${tag}`);
  const ab = await platform.call('POST', `${P}/rot-4-${tag}/abort`, {});
  t.match(ab.body.rotation, { state: 'blocked', mutationStarted: true, finished: false }, 'after dual write began, the rollback runs first');
  await until(`rot-4-${tag}`, (r) => r.finished === true, 60_000);
  await checkState(t, 'after-abort');
  t.notOk(JSON.stringify(await rotation(`rot-4-${tag}`)).includes(candidateKeyHex), 'no key material');
});
