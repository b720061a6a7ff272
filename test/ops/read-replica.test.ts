import { spawnSync } from 'node:child_process';
import postgres from 'postgres';
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { PrivatePostgres, waitFor } from '../helpers/processes.js';
import { adminOf } from '../admin/helpers.js';

// A private primary and a streaming replica of it (pg_basebackup -R), both from the system binaries.
const primary = await PrivatePostgres.primary();
t.teardown(() => primary.destroy());
spawnSync('psql', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-c', 'create database svc']);
const migrated = spawnSync(process.execPath, ['dist/src/cli.js', 'migrate'], { env: { ...process.env, DATABASE_URL: primary.url('svc') }, encoding: 'utf8' });
if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
const replica = await PrivatePostgres.replicaOf(primary);
t.teardown(() => replica.destroy());

const srv = await startTestServer({ DATABASE_URL: primary.url('svc'), DATABASE_READ_URL: replica.url('svc') });
t.teardown(() => srv.close());
const onPrimary = srv.deps.sql;
const onReplica = postgres(replica.url('svc'), { max: 1, onnotice: () => {} });
t.teardown(() => onReplica.end({ timeout: 1 }));
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'replica');

const pause = async () => {
  await onReplica`select pg_wal_replay_pause()`;
  await waitFor(async () => (await onReplica<{ s: string }[]>`select pg_get_wal_replay_pause_state() as s`)[0]!.s === 'paused');
};
const resume = () => onReplica`select pg_wal_replay_resume()`;
const nameInList = async (clientId: string) => (await call('GET', '/api/admin/clients?limit=100')).body.items.find((c: any) => c.client_id === clientId)?.name;

const created = await call('POST', '/api/admin/clients', { client_id: `${tenantId}-app`, name: 'First', grant_types: ['client_credentials'] });
const appId = created.body.client_id as string;

t.test('admin reads come from the replica: with replay paused, a change made behind the API is not seen until replay resumes', async (t) => {
  t.equal(created.status, 201);
  // Wait for the replica to pass the creation, so reads are back on it.
  await waitFor(async () => (await nameInList(appId)) === 'First' && (await onReplica`select 1 from clients where client_id = ${appId}`).length === 1);
  await pause();
  t.teardown(resume);
  // Not through the admin API, so no read-your-writes fence: only the replica's view decides what a GET shows.
  await onPrimary`update clients set name = 'Changed behind the API' where client_id = ${appId}`;
  t.equal(await nameInList(appId), 'First', 'the list is stale: it was read on the paused replica');
  t.equal((await call('GET', `/api/admin/clients/${appId}`)).body.name, 'First', 'so is the get');
  await resume();
  await waitFor(async () => (await nameInList(appId)) === 'Changed behind the API');
  t.pass('after replay resumes the replica shows the change');
});

t.test('read-your-writes: with replay paused, an admin change and every read after it are fresh (served by the primary)', async (t) => {
  await pause();
  t.teardown(resume);
  const upd = await call('PUT', `/api/admin/clients/${appId}`, { name: 'Renamed through the API' });
  t.equal(upd.status, 200);
  t.equal(upd.body.name, 'Renamed through the API', 'the write\'s own response is fresh');
  t.equal(await nameInList(appId), 'Renamed through the API', 'the next list sees it although the replica has not replayed it');
  t.equal((await call('GET', `/api/admin/clients/${appId}`)).body.name, 'Renamed through the API');
  const audit = await call('GET', '/api/admin/admin-audit-log?limit=5');
  t.equal(audit.status, 200);
  t.ok(audit.body.items.some((e: any) => e.action === 'client.update' && e.resource_id === appId), 'the audit log read sees the change\'s entry');
  t.equal((await onReplica<{ name: string }[]>`select name from clients where client_id = ${appId}`)[0]!.name, 'Changed behind the API', 'the replica itself is still behind');
  await resume();
  // Once the replica has passed the change, reads go back to it: pause again and change behind the API.
  await waitFor(async () => (await onReplica<{ name: string }[]>`select name from clients where client_id = ${appId}`)[0]!.name === 'Renamed through the API');
  await pause();
  await onPrimary`update clients set name = 'Second change behind the API' where client_id = ${appId}`;
  t.equal(await nameInList(appId), 'Renamed through the API', 'reads are back on the replica once it caught up');
  await resume();
});

t.test('a replica that is down does not fail admin reads: they run on the primary', async (t) => {
  await replica.stop();
  const list = await call('GET', '/api/admin/clients?limit=100');
  t.equal(list.status, 200);
  t.equal(list.body.items.find((c: any) => c.client_id === appId)?.name, 'Second change behind the API', 'read on the primary');
  const one = await call('GET', `/api/admin/clients/${appId}`);
  t.equal(one.status, 200);
  const write = await call('PUT', `/api/admin/clients/${appId}`, { name: 'Written while the replica is down' });
  t.equal(write.status, 200);
  t.equal((await call('GET', `/api/admin/clients/${appId}`)).body.name, 'Written while the replica is down');
});
