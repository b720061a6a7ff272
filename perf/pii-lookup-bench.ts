// Issue 14 "done when": login and admin user lookup by email cost no more than before the PII change,
// compared in one run. Loads the previous commit's build (--baseline, its dist/ directory) and this one,
// seeds each its own database with the same users, and alternates rounds of:
//   login  - loginUser() of each version for a returning user (the Postgres side of /email-code/verify:
//            the user update and the auth.login event in one transaction)
//   lookup - the admin API's exact-address search: users.list({ email, limit: 20 })
// node dist/perf/pii-lookup-bench.js --baseline /path/to/old/dist --old-db URL --new-db URL [--users 20000] [--seconds 5] [--rounds 3] [--concurrency 8]
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import os from 'node:os';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const baseline = path.resolve(arg('baseline', ''));
const users = Number(arg('users', '20000'));
const seconds = Number(arg('seconds', '5'));
const rounds = Number(arg('rounds', '3'));
const concurrency = Number(arg('concurrency', '8'));
const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

interface Version { name: string; dist: string; db: string }
const versions: Version[] = [
  { name: 'before', dist: baseline, db: arg('old-db', '') },
  { name: 'after', dist: here, db: arg('new-db', '') },
];

type AnyStore = { forTenant(t: string): { users: { insertMany(u: unknown[]): Promise<unknown[]>; list(f: unknown): Promise<unknown[]> } } };
interface Loaded { sql: any; v: Version; store: AnyStore; login: (email: string) => Promise<unknown>; end(): Promise<void>; tenant: string }

async function load(v: Version): Promise<Loaded> {
  const imp = (p: string) => import(path.join(v.dist, 'src', p));
  // Older builds keep these modules elsewhere (src/store/sql.js, src/store/pii-vault.js).
  const where = (...ps: string[]) => ps.find((p) => fs.existsSync(path.join(v.dist, 'src', p)));
  const { createSql } = await imp(where('sql.js', 'store/sql.js')!);
  const { Store } = await imp('store/index.js');
  const { loginUser } = await imp('login/users.js');
  const { loadConfig } = await imp('config.js');
  const sql = createSql({ databaseUrl: v.db, databasePoolSize: concurrency + 2 });
  let store: AnyStore;
  // The previous commit has no PII vault; this one needs it.
  const vault = where('pii/vault.js', 'store/pii-vault.js');
  if (vault) {
    const { PiiVault } = await imp(vault);
    store = new Store(sql, PiiVault.fromConfig(loadConfig({ ...process.env, DATABASE_URL: v.db }), sql));
  } else store = new Store(sql);
  const tenant = `bench-${randomBytes(3).toString('hex')}`;
  await sql`insert into tenants (id, name) values (${tenant}, ${tenant})`;
  const deps = { store, sql };
  return { sql, v, store, tenant, login: (email) => loginUser(deps, { tenantId: tenant, email, clientId: 'bench' }), end: () => sql.end({ timeout: 5 }) };
}

const email = (i: number) => `person${i}@bench.example`;

async function timed(fn: (i: number) => Promise<unknown>): Promise<{ ops: number; meanMs: number; cpuUsPerOp: number }> {
  const end = Date.now() + seconds * 1000;
  let ops = 0; let total = 0;
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      const t0 = performance.now();
      await fn(Math.floor(Math.random() * users));
      total += performance.now() - t0; ops++;
    }
  }));
  const c = process.cpuUsage(cpu);
  return { ops: ops / seconds, meanMs: total / ops, cpuUsPerOp: (c.user + c.system) / ops };
}

const loaded: Loaded[] = [];
for (const v of versions) {
  const l = await load(v);
  for (let i = 0; i < users; i += 1000) {
    await l.store.forTenant(l.tenant).users.insertMany(Array.from({ length: Math.min(1000, users - i) }, (_, k) => ({ email: email(i + k), name: `Person ${i + k}`, emailVerified: true })));
  }
  // Statistics as a running database has them (autovacuum analyzes a table this size within a minute).
  await l.sql`analyze`;
  loaded.push(l);
}
console.log(`# pii-lookup-bench ${new Date().toISOString()} ${os.cpus()[0]?.model} x${os.cpus().length}; ${users} users per version, ${concurrency} concurrent, ${seconds} s per round`);
const results: Record<string, Record<string, Array<{ ops: number; meanMs: number; cpuUsPerOp: number }>>> = {};
for (let r = 0; r < rounds; r++) {
  // Alternate the order each round so drift in machine speed falls on both alike.
  for (const l of r % 2 ? [...loaded].reverse() : loaded) {
    const ops: Record<string, (i: number) => Promise<unknown>> = {
      login: (i) => l.login(email(i)),
      lookup: (i) => l.store.forTenant(l.tenant).users.list({ limit: 20, email: email(i).toUpperCase() }),
    };
    for (const [op, fn] of Object.entries(ops)) {
      const res = await timed(fn);
      ((results[op] ??= {})[l.v.name] ??= []).push(res);
      console.log(`round ${r + 1} ${op.padEnd(6)} ${l.v.name.padEnd(6)} ${res.ops.toFixed(0).padStart(6)} ops/s  mean ${res.meanMs.toFixed(2)} ms  client CPU ${res.cpuUsPerOp.toFixed(0)} µs/op`);
    }
  }
}
for (const [op, by] of Object.entries(results)) {
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const b = med(by.before!.map((x) => x.ops)); const a = med(by.after!.map((x) => x.ops));
  const bc = med(by.before!.map((x) => x.cpuUsPerOp)); const ac = med(by.after!.map((x) => x.cpuUsPerOp));
  console.log(`${op}: median ops/s before ${b.toFixed(0)}, after ${a.toFixed(0)} (after/before ${(a / b).toFixed(3)}); client CPU µs/op before ${bc.toFixed(0)}, after ${ac.toFixed(0)}`);
}
for (const l of loaded) await l.end();
