// Issue 31 item 6: what a token status list costs to rebuild at 1,000,000 tokens of one tenant, and how
// large it is, with 0.1%, 1% and 10% of them revoked. Builds the list as GET /statuslists does (the
// Postgres read of the revoked indices, the bitmap, deflate, the RS256 signature), on a fresh process
// cache each time.
// DATABASE_URL=… REDIS_URL=… node dist/perf/status-list-bench.js [--tokens 1000000] [--rounds 5]
import { randomInt } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { decodeJwt } from 'jose';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createTokenServices } from '../src/services.js';
import { createRedis } from '../src/store/redis.js';
import { createSql } from '../src/sql.js';
import { StatusLists } from '../src/tokens/status-list.js';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const tokens = Number(arg('tokens', '1000000'));
const rounds = Number(arg('rounds', '5'));

const config = loadConfig({ ...process.env, NODE_ENV: process.env.NODE_ENV ?? 'development' });
const sql = createSql(config);
const redis = createRedis(config);
const services = await createTokenServices(config, sql, redis, createLogger('silent'));
const tenant = `sl-bench-${Date.now()}`;
await sql`insert into tenants (id, name, settings) values (${tenant}, ${tenant}, ${sql.json({ status_list: true })})`;
await sql`insert into status_list_counters (tenant_id, next) values (${tenant}, ${tokens})`;
const far = Date.now() + 3_600_000;
let revoked = 0;
for (const share of [0.001, 0.01, 0.1]) {
  const want = Math.floor(tokens * share);
  const rows = [];
  for (; revoked < want; revoked++) rows.push({ jti: `bench-${tenant}-${revoked}`, tenant_id: tenant, expires_at: far, status_idx: randomInt(tokens) });
  for (let i = 0; i < rows.length; i += 10_000) await sql`insert into revocations ${sql(rows.slice(i, i + 10_000))}`;
  const times: number[] = [];
  let jwt = '';
  for (let r = 0; r < rounds; r++) {
    const lists = new StatusLists(sql, config.issuer, services.tenantSettings, services.signer);
    const t0 = process.hrtime.bigint();
    jwt = (await lists.token(tenant, 0))!;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const lst = (decodeJwt(jwt).status_list as { lst: string }).lst;
  const bitmap = inflateSync(Buffer.from(lst, 'base64url')).length;
  console.log(`${tokens} tokens, ${revoked} revoked (${share * 100}%): rebuild median ${times[Math.floor(times.length / 2)]!.toFixed(1)} ms (min ${times[0]!.toFixed(1)}, max ${times[times.length - 1]!.toFixed(1)}), list token ${jwt.length} bytes (bitmap ${bitmap} bytes before deflate)`);
}
await sql`delete from revocations where tenant_id = ${tenant}`;
await sql`delete from status_list_counters where tenant_id = ${tenant}`;
await sql`delete from tenants where id = ${tenant}`;
await services.close();
await redis.quit();
await sql.end();
