import t from 'tap';
import { rotateKeys } from '../../src/tokens/keys.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { j } from '../helpers/http.js';
import { header } from '../helpers/jwt.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

t.test('signing threads learn a rotated key on first use; every token verifies', async (t) => {
  // Rotation changes the server-wide key set, so this test has a database of its own.
  const db = await tempDatabase();
  t.teardown(db.drop);
  await migrate(db.sql);
  const srv = await startTestServer({ DATABASE_URL: db.url, CRYPTO_THREADS: '2' });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'signing-pool');
  const issue = () => Promise.all(Array.from({ length: 40 }, () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }).then(j)));
  const before = await issue();
  const r = await rotateKeys(srv.deps.sql, srv.config.keyEncryptionKey, srv.config.tokenSigningAlg, 86_400);
  await srv.deps.tokens.keys.load();
  const after = await issue();
  t.same(after.filter((x) => !x.access_token), [], 'every issuance after rotation succeeds');
  t.ok(after.every((x) => header(x.access_token).kid === r.active), 'tokens after rotation carry the new kid');
  const tokens = [...before, ...after].map((x) => x.access_token as string);
  const answers = await Promise.all(tokens.map((tok) => postForm(`${srv.url}/introspect`, b.clients.resource_server, { token: tok }).then(j)));
  t.equal(answers.filter((a) => a.active === true).length, tokens.length, 'every token from either key introspects active');
});

t.test('past the signing wait budget, /token sheds with a fast 503 and recovers', async (t) => {
  // One thread, a floor of one batch (32) and a 1 ms budget: once the first burst has measured what a
  // signature costs, a burst queues past the floor and past the predicted 1 ms wait; the rest is shed.
  const srv = await startTestServer({ CRYPTO_THREADS: '1', CRYPTO_QUEUE_FLOOR: '32', CRYPTO_QUEUE_WAIT_MS: '1' });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'signing-shed');
  const burst = () => Promise.all(Array.from({ length: 160 }, () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' })));
  await burst();
  // The pool is idle again: nothing ahead, so a lone request is served.
  const lone = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
  t.equal(lone.status, 200, 'a request to an idle pool is served');
  // A burst below the floor is never refused, whatever the budget.
  const small = await Promise.all(Array.from({ length: 20 }, () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' })));
  t.same([...new Set(small.map((r) => r.status))], [200], 'a burst of 20 is served in full');
  await Promise.all(small.map((r) => r.body?.cancel()));
  const answers = await burst();
  const statuses = answers.map((r) => r.status);
  t.ok(statuses.includes(200), 'part of the burst is served');
  t.ok(statuses.includes(503), 'the rest is shed');
  t.same([...new Set(statuses)].sort(), [200, 503], 'nothing but 200 and 503');
  const shed = answers.find((r) => r.status === 503)!;
  t.equal(shed.headers.get('retry-after'), '1', 'Retry-After on the 503');
  t.equal((await j(shed)).error, 'service_unavailable', "the spec's error body");
  const served = answers.filter((r) => r.status === 200);
  t.ok((await Promise.all(served.map(j))).every((x) => typeof x.access_token === 'string'), 'served answers carry tokens');
  await Promise.all(answers.filter((r) => !r.bodyUsed).map((r) => r.body?.cancel()));
  const later = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
  t.equal(later.status, 200, 'served again once the queue has drained');
});

t.test('with the default floor, a burst the size of a closed loop of 128 connections is served in full', async (t) => {
  // Concurrency is not overload (issue 19): the same 1 ms budget as above, default floor (192).
  const srv = await startTestServer({ CRYPTO_THREADS: '1', CRYPTO_QUEUE_WAIT_MS: '1' });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'signing-floor');
  const burst = () => Promise.all(Array.from({ length: 128 }, () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' })));
  await Promise.all((await burst()).map((r) => r.body?.cancel()));
  const answers = await burst();
  t.same([...new Set(answers.map((r) => r.status))], [200], 'every request of the second burst is served');
  await Promise.all(answers.map((r) => r.body?.cancel()));
});
