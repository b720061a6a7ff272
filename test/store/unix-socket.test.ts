import fs from 'node:fs';
import t from 'tap';
import { createSql, unixSocket } from '../../src/sql.js';

t.test("libpq's ?host=/dir selects the Unix socket in that directory", async (t) => {
  t.same(unixSocket('postgres://svc@localhost/svc?host=/var/run/postgresql'),
    { url: 'postgres://svc@localhost/svc', path: '/var/run/postgresql/.s.PGSQL.5432' });
  t.same(unixSocket('postgres://svc@localhost:6543/svc?host=/tmp/pg/&sslmode=disable'),
    { url: 'postgres://svc@localhost:6543/svc?sslmode=disable', path: '/tmp/pg/.s.PGSQL.6543' });
  const tcp = 'postgres://svc@db.internal:5432/svc?host=db.other';
  t.same(unixSocket(tcp), { url: tcp, path: undefined }, 'a host name is left to the client');
});

const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test');
const local = ['127.0.0.1', 'localhost', '::1'].includes(base.hostname);
const dir = '/var/run/postgresql';
t.test('queries run over the local Postgres Unix socket', { skip: !local || !fs.existsSync(`${dir}/.s.PGSQL.${base.port || '5432'}`) ? 'no local Postgres socket' : false }, async (t) => {
  const url = new URL(base);
  url.searchParams.set('host', dir);
  const sql = createSql({ databaseUrl: url.toString(), databasePoolSize: 1 });
  t.teardown(() => sql.end());
  const [row] = await sql<{ addr: string | null; one: number }[]>`select inet_server_addr() as addr, 1 as one`;
  t.equal(row!.one, 1);
  t.equal(row!.addr, null, 'no server address: the connection is not TCP');
});
