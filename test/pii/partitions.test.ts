import t from 'tap';
import { closeLogin } from '../../src/login/index.js';
import { createLogger } from '../../src/log.js';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { finishMove } from '../../src/pii/moves.js';
import { startEmailWorker } from '../../workers/email-worker.js';
import { adminOf, events } from '../admin/helpers.js';
import { tempDatabase } from '../helpers/db.js';
import { startTestServer } from '../helpers/server.js';
import { codeFor } from '../login/fixtures.js';

// Issue 14 items 1-4: users' personal data in partitions chosen by tenant policy, declared residence and
// rules — `default` and `eu` as schemas of the main database, `us` in a database of its own, `apac`
// configured but empty — sealed at rest, found by email only through the blind index.
const usDb = await tempDatabase();
t.teardown(() => usDb.drop());
const sink = await startSmtpSink();
t.teardown(() => sink.close());
const srv = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${sink.port}`, PII_PARTITIONS: 'eu,us,apac', PII_DATABASE_URL_US: usDb.url });
const worker = await startEmailWorker(srv.config, createLogger('silent'));
t.teardown(async () => { await worker.close(); await srv.close(); await closeLogin(srv.deps); });
const admin = await adminOf(srv, ['admin:*'], 'pii');
const other = await adminOf(srv, ['admin:*'], 'pii-other');
const platform = await adminOf(srv, ['admin:*'], 'pii-platform', true);
const { call } = admin;

const rules = [
  { attribute: 'email_domain', operator: 'eq', value: 'us.example.test', partition: 'us', priority: 20 },
  { attribute: 'metadata.country', operator: 'in', value: ['DE', 'FR'], partition: 'eu', priority: 10 },
  { attribute: 'metadata.country', operator: 'eq', value: 'JP', partition: 'apac', priority: 5, enabled: false },
];
const tag = Math.random().toString(36).slice(2, 8);
const people = {
  plain: `plain-${tag}@example.test`,
  euByRule: `eu-${tag}@example.test`,
  usByDomain: `us-${tag}@us.example.test`,
  usByResidence: `res-${tag}@example.test`,
  jpDisabledRule: `jp-${tag}@example.test`,
};
const ids: Record<string, string> = {} as Record<string, string>;
const idOf = (k: string): string => ids[k]!;

t.test('settings: GET defaults, PUT audited, unknown partitions 422', async (t) => {
  const got = await call('GET', '/api/admin/settings/pii-partitions');
  t.equal(got.status, 200);
  t.match(got.body, { tenant_id: admin.tenantId, policy_partition: null, use_residence: true, rules: [], available_partitions: ['default', 'eu', 'us', 'apac'] });
  const bad = await call('PUT', '/api/admin/settings/pii-partitions', { policy_partition: 'mars', use_residence: true, rules: [{ ...rules[0], partition: 'moon' }] });
  t.equal(bad.status, 422);
  t.equal(bad.body.error, 'validation_error');
  t.ok(bad.body.details.policy_partition && bad.body.details['rules/0/partition'], JSON.stringify(bad.body.details));
  const unknownField = await call('PUT', '/api/admin/settings/pii-partitions', { policy_partition: null, use_residence: true, rules: [], extra: 1 });
  t.equal(unknownField.status, 422);
  const put = await call('PUT', '/api/admin/settings/pii-partitions', { policy_partition: null, use_residence: true, rules });
  t.equal(put.status, 200);
  t.match(put.body.rules[2], { enabled: false });
  t.equal(put.body.rules[0].enabled, true, 'enabled defaults to true');
  const [audit] = await srv.deps.sql`select action, result from admin_audit_log where tenant_id = ${admin.tenantId} and action = 'settings.pii_partitions.update'`;
  t.match(audit, { result: 'success' });
});

t.test('new users land by residence, rules by priority, default', async (t) => {
  const create = async (email: string, metadata: Record<string, unknown> = {}) => {
    const r = await call('POST', '/api/admin/users', { email, name: `Name ${email}`, metadata });
    t.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  ids.plain = await create(people.plain);
  ids.euByRule = await create(people.euByRule, { country: 'fr' });
  ids.usByDomain = await create(people.usByDomain, { country: 'DE' }); // priority 10 (eu) beats 20 (us)
  ids.usByResidence = await create(people.usByResidence, { residence: 'us', country: 'DE' }); // residence before rules
  ids.jpDisabledRule = await create(people.jpDisabledRule, { country: 'JP' });
  const where = Object.fromEntries((await srv.deps.sql<{ id: string; pii_partition: string }[]>`select id, pii_partition from users where tenant_id = ${admin.tenantId}`).map((r) => [r.id, r.pii_partition]));
  t.equal(where[ids.plain!], 'default');
  t.equal(where[ids.euByRule!], 'eu');
  t.equal(where[ids.usByDomain!], 'eu', 'the rule with the lower priority number wins');
  t.equal(where[ids.usByResidence!], 'us', 'declared residence comes before rules');
  t.equal(where[ids.jpDisabledRule!], 'default', 'a disabled rule is skipped');
  // The us rows are in the other database; eu rows in the main one's pii_eu schema.
  const [us] = await usDb.sql<{ n: number }[]>`select count(*)::int as n from pii_us.user_pii where tenant_id = ${admin.tenantId}`;
  t.equal(us!.n, 1);
  const [eu] = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from pii_eu.user_pii where tenant_id = ${admin.tenantId}`;
  t.equal(eu!.n, 2);
  // Tenant policy overrides everything for users created after it.
  await other.call('PUT', '/api/admin/settings/pii-partitions', { policy_partition: 'us', use_residence: true, rules });
  const o = await other.call('POST', '/api/admin/users', { email: `policy-${tag}@example.test`, metadata: { residence: 'eu', country: 'FR' } });
  t.equal(o.status, 201);
  const [op] = await srv.deps.sql`select pii_partition from users where id = ${o.body.id}`;
  t.equal(op!.pii_partition, 'us');
});

t.test('every user is found by email, whatever its partition and the case of the address', async (t) => {
  for (const [k, email] of Object.entries(people)) {
    const r = await call('GET', `/api/admin/users?email=${encodeURIComponent(email.toUpperCase())}`);
    t.equal(r.status, 200);
    t.same(r.body.items.map((u: { id: string }) => u.id), [ids[k]], `${k} by exact address`);
    t.equal(r.body.items[0].email, email);
    t.match(r.body.items[0].metadata, {}, 'metadata comes back');
  }
  const byId = await call('GET', `/api/admin/users/${ids.usByResidence}`);
  t.match(byId.body, { email: people.usByResidence, name: `Name ${people.usByResidence}`, metadata: { residence: 'us' } });
  const search = await call('GET', `/api/admin/users?q=${tag}`);
  t.equal(search.body.items.length, 5, 'substring search reads sealed rows of every partition');
  const prefix = await call('GET', `/api/admin/users?email=us-${tag}`);
  t.same(prefix.body.items.map((u: { id: string }) => u.id), [ids.usByDomain], 'prefix search');
  const dup = await call('POST', '/api/admin/users', { email: people.usByResidence.toUpperCase() });
  t.equal(dup.status, 409, 'the address is taken in whatever partition it lives');
  t.equal((await other.call('GET', `/api/admin/users?email=${encodeURIComponent(people.plain)}`)).body.items.length, 0, 'not in another tenant');
});

t.test('login by email code finds users in a separate database and creates new ones by the rules', async (t) => {
  const web = (await srv.deps.sql<{ client_id: string }[]>`select client_id from clients where tenant_id = ${admin.tenantId} and name ilike '%web%' limit 1`)[0];
  t.ok(web, 'the tenant has a web client');
  const login = async (email: string) => {
    const before = sink.messages.filter((m) => m.to.includes(email.toLowerCase())).length;
    let res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web!.client_id }) });
    t.equal(res.status, 200);
    const code = await codeFor(sink, email, before);
    res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
    t.equal(res.status, 200);
    return (await res.json()) as { sub: string };
  };
  t.equal((await login(people.usByResidence)).sub, ids.usByResidence, 'a user whose data lives in the us database');
  t.equal((await login(people.euByRule)).sub, ids.euByRule);
  const fresh = `fresh-${tag}@us.example.test`;
  const created = await login(fresh);
  const [row] = await srv.deps.sql`select pii_partition from users where id = ${created.sub}`;
  t.equal(row!.pii_partition, 'us', 'a first login is placed by the rules too');
  ids.fresh = created.sub;
});

t.test('stats: active users per partition, zero-filled; other tenants only for platform admins', async (t) => {
  await call('POST', `/api/admin/users/${ids.jpDisabledRule}/suspend`);
  const s = await call('GET', '/api/admin/settings/pii-partitions/stats');
  t.equal(s.status, 200);
  t.same(s.body.byPartition, { default: 1, eu: 2, us: 2, apac: 0 });
  t.equal(s.body.total, 5);
  t.same(s.body.availablePartitions, ['default', 'eu', 'us', 'apac']);
  t.equal(s.body.tenantId, admin.tenantId);
  t.type(s.body.note, 'string');
  const mine = await call('GET', `/api/admin/settings/pii-partitions/stats?tenant_id=${admin.tenantId}`);
  t.equal(mine.status, 200);
  const refused = await call('GET', `/api/admin/settings/pii-partitions/stats?tenant_id=${other.tenantId}`);
  t.equal(refused.status, 403);
  const p = await platform.call('GET', `/api/admin/settings/pii-partitions/stats?tenant_id=${admin.tenantId}`);
  t.equal(p.status, 200);
  t.same(p.body.byPartition, s.body.byPartition);
  t.equal((await platform.call('GET', '/api/admin/settings/pii-partitions/stats?tenant_id=no-such-tenant')).status, 404);
  t.equal((await call('GET', '/api/admin/settings/pii-partitions/stats?tenant_id=')).status, 422, 'an empty tenant_id');
});

t.test('nothing in Postgres holds these addresses, names or metadata in clear', async (t) => {
  // A user whose name and metadata carry no address (issue 29 item 12): created and changed through the
  // admin API, so the audit log (before/after) and the log records of its entries hold them too.
  const person = { name: `Quirinus Vandermolen ${tag}`, renamed: `Quirinella Vandermolen ${tag}`, nickname: `zephyrine-${tag}`, city: `Oberwolfach${tag}` };
  const made = await call('POST', '/api/admin/users', { email: `named-${tag}@example.test`, name: person.name, metadata: { nickname: person.nickname, shoe_size: 43 } });
  t.equal(made.status, 201, JSON.stringify(made.body));
  const changed = await call('PUT', `/api/admin/users/${made.body.id}`, { name: person.renamed, metadata: { nickname: person.nickname, city: person.city } });
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const [record] = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from log_records where tenant_id = ${admin.tenantId} and body->>'resource_id' = ${made.body.id}`;
  t.equal(record!.n, 2, 'both audit entries wait as log records');

  const secrets = [...Object.values(people), `fresh-${tag}@us.example.test`, `named-${tag}@example.test`, person.name, person.renamed, person.nickname, person.city];
  for (const [name, db] of [['main', srv.deps.sql], ['us', usDb.sql]] as const) {
    const tables = await db<{ s: string; n: string }[]>`select table_schema as s, table_name as n from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
    const hits: string[] = [];
    for (const { s, n } of tables) {
      const [r] = await db.unsafe(`select count(*)::int as c from "${s}"."${n}" x where lower(x::text) like any($1)`, [secrets.map((a) => `%${a.toLowerCase()}%`)]);
      if (r!.c > 0) hits.push(`${s}.${n}`);
    }
    t.same(hits, [], `${name} database: no table holds an address, a name or a metadata value`);
  }

  // Administrators allowed to read before/after still see them in clear.
  const entries = (await call('GET', `/api/admin/admin-audit-log?resource_id=${made.body.id}`)).body.items;
  t.match(entries.find((e: { action: string }) => e.action === 'user.update'), {
    before: { name: person.name, metadata: { nickname: person.nickname, shoe_size: 43 } },
    after: { email: `named-${tag}@example.test`, name: person.renamed, metadata: { nickname: person.nickname, city: person.city } },
  });
  t.match(entries.find((e: { action: string }) => e.action === 'user.create')?.after, { name: person.name, metadata: { shoe_size: 43 } });
});

t.test('sealed addresses are opened where they leave: the audit log and the events receivers get', async (t) => {
  const list = await call('GET', `/api/admin/admin-audit-log?action=user.create&resource_id=${idOf('usByDomain')}`);
  t.equal(list.status, 200);
  t.match(list.body.items[0]?.after, { email: people.usByDomain, name: `Name ${people.usByDomain}` }, 'before/after show the address');
  const [raw] = await srv.deps.sql<{ after: { email: string } }[]>`select after from admin_audit_log where tenant_id = ${admin.tenantId} and resource_id = ${idOf('usByDomain')} and action = 'user.create'`;
  t.match(raw!.after.email, /^pii:v1:/, 'stored sealed');
  const [ev] = await srv.deps.sql<{ data: { email: string } }[]>`select data from event_outbox where tenant_id = ${admin.tenantId} and event = 'user.created' and data->>'user_id' = ${idOf('usByDomain')}`;
  t.match(ev!.data.email, /^pii:v1:/, 'the outbox holds it sealed');
  const opened = (await events(srv, admin.tenantId)).find((e) => e.event === 'user.created' && e.data.user_id === idOf('usByDomain'));
  t.equal(opened?.data.email, people.usByDomain, 'and opens to the address');
});

t.test('moving a user copies, switches and deletes; a move cut short is finished', async (t) => {
  const r = await call('POST', `/api/admin/users/${ids.plain}/pii-partition`, { partition: 'us' });
  t.equal(r.status, 200);
  t.same(r.body, { user_id: ids.plain, from_partition: 'default', partition: 'us', moved: true });
  t.equal((await srv.deps.sql`select 1 from pii_default.user_pii where user_id = ${idOf("plain")}`).length, 0, 'gone from the source');
  t.equal((await usDb.sql`select 1 from pii_us.user_pii where user_id = ${idOf("plain")}`).length, 1, 'in the target');
  t.match((await call('GET', `/api/admin/users?email=${encodeURIComponent(people.plain)}`)).body.items[0], { id: ids.plain, email: people.plain });
  t.same((await call('POST', `/api/admin/users/${ids.plain}/pii-partition`, { partition: 'us' })).body.moved, false, 'already there');
  t.equal((await call('POST', `/api/admin/users/${ids.plain}/pii-partition`, { partition: 'mars' })).status, 422);
  t.equal((await other.call('POST', `/api/admin/users/${ids.plain}/pii-partition`, { partition: 'eu' })).status, 404, "another tenant's user");

  // A crash after the copy: the intent row and both copies are left; readers still use the source.
  const id = ids.euByRule!;
  await srv.deps.sql`insert into pii_moves (tenant_id, user_id, from_partition, to_partition) values (${admin.tenantId}, ${id}, 'eu', 'default')`;
  await srv.deps.sql`insert into pii_default.user_pii (tenant_id, user_id, sealed) select tenant_id, user_id, sealed from pii_eu.user_pii where user_id = ${id}`;
  t.match((await call('GET', `/api/admin/users/${id}`)).body, { email: people.euByRule }, 'readable mid-move');
  // The next move of that user finishes the interrupted one first, then makes its own.
  const next = await call('POST', `/api/admin/users/${id}/pii-partition`, { partition: 'apac' });
  t.same(next.body, { user_id: id, from_partition: 'default', partition: 'apac', moved: true });
  t.equal((await srv.deps.sql`select 1 from pii_moves where user_id = ${id}`).length, 0, 'no intent left');
  t.equal((await srv.deps.sql`select 1 from pii_eu.user_pii where user_id = ${id} union all select 1 from pii_default.user_pii where user_id = ${id}`).length, 0, 'no copy left behind');
  t.match((await call('GET', `/api/admin/users/${id}`)).body, { email: people.euByRule });

  // A crash after the switch: finishing deletes the source copy.
  await srv.deps.sql`insert into pii_moves (tenant_id, user_id, from_partition, to_partition, step) values (${admin.tenantId}, ${id}, 'eu', 'apac', 'switched')`;
  await srv.deps.sql`insert into pii_eu.user_pii (tenant_id, user_id, sealed) select tenant_id, user_id, sealed from pii_apac.user_pii where user_id = ${id}`;
  await finishMove(srv.deps.sql, srv.deps.store.pii, { tenant_id: admin.tenantId, user_id: id, from_partition: 'eu', to_partition: 'apac', step: 'switched' });
  t.equal((await srv.deps.sql`select 1 from pii_eu.user_pii where user_id = ${id}`).length, 0);
  t.match((await call('GET', `/api/admin/users/${id}`)).body, { email: people.euByRule });
  const moves = await srv.deps.sql`select data from event_outbox where tenant_id = ${admin.tenantId} and event = 'user.updated' and data->>'user_id' = ${id}`;
  t.ok(moves.some((m) => m.data.pii_partition === 'apac'), 'user.updated for the move');
});

t.test('deleting a user removes its data in a separate database', async (t) => {
  t.equal((await call('DELETE', `/api/admin/users/${ids.usByResidence}`)).status, 204);
  t.equal((await usDb.sql`select 1 from pii_us.user_pii where user_id = ${idOf("usByResidence")}`).length, 0);
  t.equal((await srv.deps.sql`select 1 from user_email_index where user_id = ${idOf("usByResidence")}`).length, 0, 'index entries go too');
});

t.test('a partition that cannot be read is a 503 for stats, never a zero', async (t) => {
  await usDb.sql`alter schema pii_us rename to pii_us_away`;
  t.teardown(() => usDb.sql`alter schema pii_us_away rename to pii_us`);
  const s = await call('GET', '/api/admin/settings/pii-partitions/stats');
  t.equal(s.status, 503);
  t.equal(s.body.error, 'service_unavailable');
  t.match(s.body.error_description, /us/);
});

t.teardown(async () => {
  await srv.deps.sql`drop schema if exists pii_eu cascade`;
  await srv.deps.sql`drop schema if exists pii_apac cascade`;
});
