import t from 'tap';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { basic } from '../helpers/tokens.js';
import { spawnSync } from 'node:child_process';
import { PrivateRedis } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

// What the hot paths cost Redis (issues 19 and 22). Each Redis round trip is a wake-up of the HTTP
// process and of Redis; the client-secret failure budget once added a second one to every
// introspection, exchange and client_credentials request, which doubled the CPU of a cache hit and
// went unnoticed until a benchmark ran. Counted on a private Redis, whose statistics are this file's
// alone: `total_reads_processed` counts the times Redis read a client socket, so a request whose
// commands leave in one write costs one read.

const N = 40;

t.test('introspection, token exchange and client_credentials each cost Redis one read per request', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  t.teardown(() => redis.destroy());
  const srv = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'round-trips');
  const info = (section: string): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const line of spawnSync('redis-cli', ['-p', String(redis.port), 'info', section], { encoding: 'utf8' }).stdout.split('\n')) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
    }
    return out;
  };
  const calls = (stats: Record<string, string>, cmd: string) => Number(/calls=(\d+)/.exec(stats[`cmdstat_${cmd}`] ?? '')?.[1] ?? 0);
  /** Redis reads and commands during `n` requests made one after another. */
  const measure = async (request: () => Promise<Response>, n: number) => {
    const s0 = info('stats'); const c0 = info('commandstats');
    for (let i = 0; i < n; i++) {
      const r = await request();
      if (r.status !== 200) throw new Error(`request ${i} answered ${r.status}: ${await r.text()}`);
      await r.arrayBuffer();
    }
    const s1 = info('stats'); const c1 = info('commandstats');
    const delta = (cmd: string) => calls(c1, cmd) - calls(c0, cmd);
    return { reads: Number(s1.total_reads_processed) - Number(s0.total_reads_processed), mget: delta('mget'), get: delta('get'), set: delta('set'), multi: delta('multi') + delta('exec') };
  };
  // The same number of idle seconds shows what the server reads on its own (timers, notices).
  const idleStart = info('stats');
  await new Promise((r) => setTimeout(r, 300));
  const idleReads = Number(info('stats').total_reads_processed) - Number(idleStart.total_reads_processed);

  const token = ((await (await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' })).json()) as { access_token: string }).access_token;
  // The first introspection is a miss that writes the cache; every one after is a hit.
  await (await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token })).arrayBuffer();

  const slack = (n: number) => Math.ceil(n / 4) + 5 + idleReads;
  const hits = await measure(() => postForm(`${srv.url}/introspect`, b.clients.resource_server, { token }), N);
  t.equal(hits.mget, N, 'one MGET per introspection: revocation state, cached answer and the client\'s failure budget together');
  t.equal(hits.get, 0, 'no separate read of the failure budget');
  t.equal(hits.multi, 0, 'no transaction on the way');
  t.ok(hits.reads <= N + slack(N), `${hits.reads} reads for ${N} cache hits: the budget read travels with the MGET`);

  const exchange = await measure(() => postForm(`${srv.url}/token`, b.clients.exchanger, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  }), N);
  t.equal(exchange.mget, N, 'one MGET per exchange: the subject token\'s revocation state and the failure budget');
  t.equal(exchange.get, 0, 'no separate read of the failure budget');
  t.ok(exchange.reads <= N + slack(N), `${exchange.reads} reads for ${N} exchanges`);

  const cc = await measure(() => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }), N);
  t.equal(cc.multi, 0, 'client_credentials reads its failure budget without a transaction');
  t.equal(cc.get, N, 'one GET: the failure budget');
  t.ok(cc.reads <= N + slack(N), `${cc.reads} reads for ${N} client_credentials requests`);

  // DPoP (RFC 9449): the proof's replay record (SET NX) leaves in the same write as the request's read.
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = await exportJWK(publicKey);
  const proof = () => new SignJWT({ htm: 'POST', htu: `${srv.url}/token`, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk }).sign(privateKey);
  const dpopPost = async (form: Record<string, string>) => fetch(`${srv.url}/token`, {
    method: 'POST', body: new URLSearchParams(form),
    headers: { authorization: basic(b.clients.exchanger.client_id, b.clients.exchanger.client_secret), 'content-type': 'application/x-www-form-urlencoded', dpop: await proof() },
  });
  const dcc = await measure(() => dpopPost({ grant_type: 'client_credentials' }), N);
  // Background work (a revocation sentinel's refresh) may add a SET of its own during the run.
  t.ok(dcc.set >= N && dcc.set <= N + 2, `one SET NX per DPoP client_credentials request, the proof's jti (${dcc.set} for ${N})`);
  t.equal(dcc.get, N, 'and the failure budget\'s GET');
  t.ok(dcc.reads <= N + slack(N), `${dcc.reads} reads for ${N} DPoP client_credentials requests: the jti write travels with the read`);
  const bound = ((await (await dpopPost({ grant_type: 'client_credentials' })).json()) as { access_token: string }).access_token;
  const dex = await measure(() => dpopPost({
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: bound, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  }), N);
  t.equal(dex.mget, N, 'one MGET per DPoP exchange');
  t.ok(dex.set >= N && dex.set <= N + 2, `one SET NX per DPoP exchange (${dex.set} for ${N})`);
  t.ok(dex.reads <= N + slack(N), `${dex.reads} reads for ${N} DPoP exchanges`);
});
