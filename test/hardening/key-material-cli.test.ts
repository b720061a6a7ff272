import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { removePrefix, uniqueName } from '../helpers/env.js';

// Issue 29 item 13: every command but `svc start` defaults NODE_ENV to development, so a command run
// without KEY_ENCRYPTION_KEY used to seal new key material under the development key (published in the
// source) and exit 0; nodes with the real key then could not read it. Commands that write key material
// now refuse unless the key is given or NODE_ENV=development (or test) is set explicitly. Signing keys are
// environment-wide, so this file has a database of its own.
// A dozen CLI runs, each a Node start: slow on a busy machine.
t.setTimeout(300_000);
const cli = path.resolve('dist/src/cli.js');
const db = await tempDatabase();
t.teardown(() => db.drop());
await migrate(db.sql);
const prefix = `${uniqueName('keycli')}:`;
t.teardown(() => removePrefix(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix));

/** The test runner's environment without NODE_ENV and KEY_ENCRYPTION_KEY, on this file's database. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, REDIS_PREFIX: prefix, LOG_LEVEL: 'warn', ...extra };
  for (const k of ['NODE_ENV', 'KEY_ENCRYPTION_KEY'] as const) if (!(k in extra)) delete e[k];
  return e;
}
const run = (args: string[], extra: Record<string, string> = {}) => spawnSync(process.execPath, [cli, ...args], { env: env(extra), encoding: 'utf8', timeout: 60_000 });

async function counts(): Promise<Record<string, number>> {
  const [r] = await db.sql<Record<string, number>[]>`select
    (select count(*)::int from signing_keys) as signing_keys, (select count(*)::int from tenants) as tenants,
    (select count(*)::int from clients) as clients, (select count(*)::int from tenant_data_keys) as tenant_data_keys`;
  return r!;
}

t.test('without KEY_ENCRYPTION_KEY and without NODE_ENV, commands that write key material refuse and write nothing', async (t) => {
  const before = await counts();
  t.same(before, { signing_keys: 0, tenants: 0, clients: 0, tenant_data_keys: 0 }, 'a fresh database');
  for (const args of [['bootstrap', '--json'], ['keys', 'rotate'], ['clients', 'create', '--tenant', 'default', '--name', 'x', '--grant-types', 'client_credentials']]) {
    const r = run(args);
    t.equal(r.status, 2, `svc ${args.slice(0, 2).join(' ')} exits 2`);
    t.match(r.stderr, /KEY_ENCRYPTION_KEY is not set: refusing to write key material sealed under the built-in development key/, 'and says why');
    t.match(r.stderr, /set KEY_ENCRYPTION_KEY \(or NODE_ENV=development/, 'and what to do');
    t.equal(r.stdout, '', 'prints no secrets');
  }
  t.same(await counts(), before, 'nothing was written');
  const prod = run(['keys', 'rotate'], { NODE_ENV: 'production', ISSUER: 'https://id.example' });
  t.equal(prod.status, 2, 'NODE_ENV=production without the key is a configuration error, as before');
  t.match(prod.stderr, /KEY_ENCRYPTION_KEY must be 64 hex characters/);
  t.same(await counts(), before, 'still nothing written');
});

t.test('with NODE_ENV=development (or test) set explicitly, the development key is used', async (t) => {
  const boot = run(['bootstrap', '--json'], { NODE_ENV: 'development' });
  t.equal(boot.status, 0, boot.stderr);
  t.equal(JSON.parse(boot.stdout).tenant_id, 'default');
  t.match(await counts(), { signing_keys: 2, tenants: 1 }, 'the active and next signing keys were created');
  const rot = run(['keys', 'rotate'], { NODE_ENV: 'development' });
  t.equal(rot.status, 0, rot.stderr);
  const r = JSON.parse(rot.stdout) as { active: string; next: string; retired: string };
  const rows = await db.sql<{ kid: string; status: string }[]>`select kid, status from signing_keys`;
  t.same(Object.fromEntries(rows.map((x) => [x.kid, x.status])), { [r.active]: 'active', [r.next]: 'next', [r.retired]: 'retired' });
  const test = run(['keys', 'rotate'], { NODE_ENV: 'test' });
  t.equal(test.status, 0, `NODE_ENV=test counts as asked for (the suite runs the CLI so): ${test.stderr}`);
  // A key given explicitly is always enough, whatever NODE_ENV says (here the default, development).
  const created = run(['clients', 'create', '--tenant', 'default', '--name', 'explicit', '--grant-types', 'client_credentials', '--json'], { KEY_ENCRYPTION_KEY: '42'.repeat(32) });
  t.equal(created.status, 0, created.stderr);
  t.match(JSON.parse(created.stdout), { tenant_id: 'default', client_id: String });
});

t.test('svc migrate seals users from before migration 0110 only with a key that was asked for', async (t) => {
  // A row as written before migration 0110: email in clear in `users`.
  await db.sql`insert into users (id, tenant_id, email, name) values ('usr_legacy1', 'default', 'legacy@example.com', 'Legacy')`;
  const refused = run(['migrate']);
  t.equal(refused.status, 2, 'exits 2');
  t.match(refused.stderr, /users written before migration 0110 are not sealed: KEY_ENCRYPTION_KEY is not set/);
  const [row] = await db.sql<{ email: string | null }[]>`select email from users where id = 'usr_legacy1'`;
  t.equal(row!.email, 'legacy@example.com', 'the row is left as it was');
  t.equal((await counts()).tenant_data_keys, 0, 'no tenant data key was created');
  const ok = run(['migrate'], { NODE_ENV: 'development' });
  t.equal(ok.status, 0, ok.stderr);
  t.match(ok.stdout, /sealed the personal data of 1 users/);
  const [after] = await db.sql<{ email: string | null }[]>`select email from users where id = 'usr_legacy1'`;
  t.equal(after!.email, null, 'sealed');
  t.equal((await counts()).tenant_data_keys, 1);
  // Nothing left to seal: migrate needs no key at all.
  t.equal(run(['migrate']).status, 0);
});
