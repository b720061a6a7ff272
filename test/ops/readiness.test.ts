import net from 'node:net';
import t from 'tap';
import { PrivateRedis, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { j } from '../helpers/http.js';

t.test('readyz reports Redis outages with 503 and recovers; healthz stays up', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  t.teardown(() => redis.destroy());
  const srv = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(() => srv.close());

  let res = await fetch(`${srv.url}/readyz`);
  t.equal(res.status, 200);
  t.same(await j(res), { status: 'ready', postgres: 'ok', redis: 'ok' });

  await redis.stop();
  res = await fetch(`${srv.url}/readyz`);
  t.equal(res.status, 503);
  const body = await j(res);
  t.equal(body.error, 'service_unavailable');
  t.match(body.error_description, /redis unreachable/);
  t.ok(res.headers.get('retry-after'));
  t.equal((await fetch(`${srv.url}/healthz`)).status, 200, 'liveness does not depend on Redis');

  await redis.start();
  await waitFor(async () => (await fetch(`${srv.url}/readyz`)).status === 200, 15_000, 200);
  t.pass('ready again once Redis is back');
});

t.test('readyz reports an unreachable Postgres with 503', async (t) => {
  // The server reaches Postgres through a TCP proxy that the test cuts, as a network failure would.
  const target = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test');
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((c) => {
    const up = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(c); sockets.add(up);
    c.pipe(up).pipe(c);
    const end = () => { c.destroy(); up.destroy(); };
    c.on('error', end); up.on('error', end); c.on('close', end); up.on('close', end);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const via = new URL(target); via.port = String((proxy.address() as net.AddressInfo).port);
  // One pooled connection, established (array types fetched) by the first readyz before the cut:
  // postgres.js fetches array types on every new connection in a promise nobody can observe, so a
  // second connection cut mid-handshake would surface as an unhandled rejection instead of a 503.
  const srv = await startTestServer({ DATABASE_URL: via.toString(), DATABASE_POOL_SIZE: '1' });
  t.teardown(() => srv.close());
  t.equal((await fetch(`${srv.url}/readyz`)).status, 200);
  proxy.close();
  for (const s of sockets) s.destroy();
  const res = await fetch(`${srv.url}/readyz`);
  t.equal(res.status, 503);
  t.match((await j(res)).error_description, /postgres unreachable/);
});

t.test('metrics and the OpenAPI document are served', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  await fetch(`${srv.url}/healthz`);
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  t.match(metrics, /svc_http_requests_total\{route="\/healthz",method="GET",status="200"\} \d+/);
  t.match(metrics, /svc_http_request_duration_seconds_bucket/);
  const doc = await j(await fetch(`${srv.url}/openapi.json`));
  t.equal(doc.openapi, '3.1.0');
  t.ok(doc.paths['/readyz'].get);
  t.ok(doc.components.schemas['common.error']);
});
