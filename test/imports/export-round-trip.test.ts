import { parse } from 'csv-parse/sync';
import t from 'tap';
import { adminOf } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { bigCsv, importEnv, mapping } from './fixtures.js';

// Export through the mapping in reverse, downloaded once, and imported again into another tenant.
const env = await importEnv('exports');
const { tenantId, token, call, sql, srv, job } = env;


t.test('export round trip: the exported file imports again into the same users', async (t) => {
  await env.worker();
  const seed = await call('POST', '/api/admin/user-imports', { mapping, csv: bigCsv(3000) });
  t.equal(seed.status, 202);
  await waitFor(async () => (await job(seed.body.id)).status === 'succeeded', 60_000, 100);
  const res = await call('POST', '/api/admin/user-exports', { mapping });
  t.equal(res.status, 202);
  const id = res.body.id;
  await waitFor(async () => (await call('GET', `/api/admin/user-exports/${id}`)).body.status === 'succeeded', 60_000, 100);
  const j = (await call('GET', `/api/admin/user-exports/${id}`)).body;
  const total = Number((await sql`select count(*)::int as n from users where tenant_id = ${tenantId}`)[0]!.n);
  t.match(j, { total_rows: total, download_available: true });
  const dl = await fetch(`${srv.url}/api/admin/user-exports/${id}/download`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  t.equal(dl.status, 200);
  t.match(dl.headers.get('content-type'), /^text\/csv/);
  const csv = await dl.text();
  const rows = parse(csv, { columns: true }) as Record<string, string>[];
  t.equal(rows.length, total);
  t.same(Object.keys(rows[0]!), ['E-Mail', 'First', 'Last', 'Phone', 'Verified', 'Team']);
  const again = await fetch(`${srv.url}/api/admin/user-exports/${id}/download`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  t.equal(again.status, 409, 'downloaded once');

  // Into a fresh tenant: every exported user comes back the same.
  const other = await adminOf(srv, ['admin:*'], 'imports-rt');
  const imp = await other.call('POST', '/api/admin/user-imports', { mapping, csv });
  t.equal(imp.status, 202);
  await waitFor(async () => (await other.call('GET', `/api/admin/user-imports/${imp.body.id}`)).body.status === 'succeeded', 60_000, 100);
  const got = (await other.call('GET', `/api/admin/user-imports/${imp.body.id}`)).body;
  // Personal data is sealed: read the users back through the repository, as the service does.
  const everyone = async (tenant: string) => {
    const out: Array<{ email: string; name: string | null; email_verified: boolean; metadata: Record<string, unknown> }> = [];
    for (let cursor: { createdAt: number; id: string } | undefined; ;) {
      const rows = await srv.deps.store.forTenant(tenant).users.list({ limit: 1000, cursor });
      out.push(...rows.slice(0, 1000).map((u) => ({ email: u.email.toLowerCase(), name: u.name, email_verified: u.email_verified, metadata: u.metadata })));
      if (rows.length <= 1000) return out.sort((x, y) => (x.email < y.email ? -1 : 1));
      cursor = { createdAt: rows[999]!.created_at, id: rows[999]!.id };
    }
  };
  const mine = await everyone(tenantId);
  const unnamed = mine.filter((u) => u.name === null).length;
  t.same(got.counts, { created: total - unnamed, updated: 0, unchanged: 0, rejected: 0, review: unnamed }, 'users without a name are warned about, as configured');
  const a = mine.filter((u) => u.name !== null);
  const b = await everyone(other.tenantId);
  t.same(b, a, 'the same users');
});

