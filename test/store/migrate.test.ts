import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';

t.test('migrations apply once, a second run applies nothing, and edited migrations are refused', async (t) => {
  const db = await tempDatabase();
  t.teardown(db.drop);
  const first = await migrate(db.sql);
  const all = fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort();
  t.same(first.applied, all, 'every migration applied in order');
  const [{ n }] = (await db.sql<{ n: number }[]>`select count(*)::int as n from schema_migrations`) as unknown as [{ n: number }];
  t.equal(n, all.length);
  const second = await migrate(db.sql);
  t.same(second.applied, [], 'nothing applied the second time');
  t.equal(second.skipped, all.length);
  const [{ exists }] = (await db.sql<{ exists: boolean }[]>`select to_regclass('public.tenants') is not null as exists`) as unknown as [{ exists: boolean }];
  t.ok(exists, 'tables exist');

  // A copy of the migrations with the first file edited must be refused, not silently skipped.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mig-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of all) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  fs.appendFileSync(path.join(dir, all[0]!), '\n-- edited\n');
  await t.rejects(migrate(db.sql, dir), /was edited/);
});

t.test('concurrent migrators apply each migration exactly once', async (t) => {
  const db = await tempDatabase();
  t.teardown(db.drop);
  const results = await Promise.all([migrate(db.sql), migrate(db.sql)]);
  const applied = results.flatMap((r) => r.applied);
  const all = fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql'));
  t.equal(applied.length, all.length, 'the advisory lock lets only one apply');
});

t.test('a failing migration leaves nothing behind', async (t) => {
  const db = await tempDatabase();
  t.teardown(db.drop);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mig-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, '0001_ok.sql'), 'create table a (x int);');
  fs.writeFileSync(path.join(dir, '0002_bad.sql'), 'create table b (x nonexistent_type);');
  await t.rejects(migrate(db.sql, dir));
  const [{ a }] = (await db.sql<{ a: boolean }[]>`select to_regclass('public.a') is not null as a`) as unknown as [{ a: boolean }];
  t.notOk(a, 'the whole batch rolled back');
});
