import net from 'node:net';
import postgres from 'postgres';
import t from 'tap';
import { createSql } from '../../src/sql.js';
import { waitFor } from '../helpers/processes.js';

// Postgres flapping while a connection is being set up must surface as a failed query, never as an
// unhandled rejection (which crashes an HTTP process). postgres.js with its default fetch_types sends
// an array-type query right after ReadyForQuery in a promise nobody awaits; our client registers the
// array types itself (src/sql.ts). A TCP proxy plays a Postgres restart on each connection right
// after the server's first ReadyForQuery (FATAL 57P01 "terminating connection due to administrator
// command", then close), i.e. exactly between the handshake and the first query.
const target = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test');

function field(k: string, v: string): Buffer { return Buffer.concat([Buffer.from(k), Buffer.from(v), Buffer.from([0])]); }
const fields = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', '57P01'), field('M', 'terminating connection due to administrator command'), Buffer.from([0])]);
const ADMIN_SHUTDOWN = Buffer.concat([Buffer.from('E'), Buffer.from(new Uint8Array(new Int32Array([0]).buffer)), fields]);
ADMIN_SHUTDOWN.writeInt32BE(fields.length + 4, 1);

/** A proxy that, while `cuts` > 0, shuts a new connection down as soon as the server said ReadyForQuery. */
async function flappingProxy() {
  const state = { cuts: 0, cutDone: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const up = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(c); sockets.add(up);
    const cut = state.cuts > 0;
    if (cut) state.cuts--;
    let buf = Buffer.alloc(0);
    let ready = false;
    c.pipe(up);
    up.on('data', (d: Buffer) => {
      if (!cut || ready) { c.write(d); return; }
      buf = Buffer.concat([buf, d]);
      // Messages: type byte, int32 length (including itself), body. Forward whole messages up to 'Z'.
      let off = 0;
      while (buf.length - off >= 5) {
        const len = buf.readInt32BE(off + 1);
        if (buf.length - off < 1 + len) break;
        const type = String.fromCharCode(buf[off]!);
        off += 1 + len;
        if (type === 'Z') {
          ready = true;
          c.end(Buffer.concat([buf.subarray(0, off), ADMIN_SHUTDOWN])); up.destroy(); state.cutDone++;
          return;
        }
      }
      c.write(buf.subarray(0, off));
      buf = buf.subarray(off);
    });
    const end = () => { c.destroy(); up.destroy(); sockets.delete(c); sockets.delete(up); };
    c.on('error', end); up.on('error', end); c.on('close', end); up.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1'; url.port = String(port);
  return {
    url: url.toString(), state,
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

const unhandled: unknown[] = [];
const onUnhandled = (err: unknown) => { unhandled.push(err); };
process.on('unhandledRejection', onUnhandled);
t.teardown(() => { process.off('unhandledRejection', onUnhandled); });

t.test('the proxy reproduces the crash with postgres.js default fetch_types (control)', async (t) => {
  const proxy = await flappingProxy();
  t.teardown(() => proxy.close());
  proxy.state.cuts = 1;
  const raw = postgres(proxy.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  t.teardown(() => raw.end({ timeout: 1 }));
  const before = unhandled.length;
  await raw`select 1`.catch(() => {});
  await waitFor(() => unhandled.length > before, 5_000, 10);
  t.ok(unhandled.length > before, 'a restart right after ReadyForQuery gives an unhandled rejection with fetch_types');
  unhandled.length = before;
});

t.test('our client: a cut after the handshake is an ordinary failed query, then it works again', async (t) => {
  const proxy = await flappingProxy();
  t.teardown(() => proxy.close());
  const sql = createSql({ databaseUrl: proxy.url, databasePoolSize: 2 });
  t.teardown(() => sql.end({ timeout: 1 }));
  const before = unhandled.length;
  for (let round = 0; round < 5; round++) {
    proxy.state.cuts = 2;
    const results = await Promise.allSettled([sql`select 1 as x`, sql`select 2 as x`]);
    for (const r of results) if (r.status === 'rejected') t.match(String((r.reason as Error).message), /administrator command|CONNECTION_CLOSED/, 'an observable error');
  }
  t.ok(proxy.state.cutDone >= 5, `connections were cut mid-setup (${proxy.state.cutDone})`);
  proxy.state.cuts = 0;
  // A connection that was being cut as the round ended may fail one more query; then all is well.
  await waitFor(async () => (await Promise.all([sql`select 1`, sql`select 1`]), true), 5_000, 10);
  const [row] = await sql<{ t: string[]; b: number[]; j: unknown[] }[]>`
    select array['a', 'b,c', '']::text[] as t, array[1, 9007199254740991]::bigint[] as b, array['{"k":1}'::jsonb] as j`;
  t.same(row!.t, ['a', 'b,c', ''], 'text[] parsed without fetched types');
  t.same(row!.b, [1, 9007199254740991], 'bigint[] elements through our bigint parser');
  t.same(row!.j, [{ k: 1 }], 'jsonb[]');
  const [echo] = await sql<{ x: string[] }[]>`select ${['x', 'y"z']}::text[] as x`;
  t.same(echo!.x, ['x', 'y"z'], 'a JS array parameter serialises as text[]');
  t.equal(unhandled.length, before, 'no unhandled rejection through all the cuts');
});
