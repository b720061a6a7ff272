import t from 'tap';
import { createHmac } from 'node:crypto';
import { filtersMatch } from '../../src/webhooks/filters.js';
import { deliveryHeaders } from '../../src/webhooks/message.js';
import { backoffMs, MAX_BACKOFF_MS } from '../../src/webhooks/retry.js';
import { generateSecret, openSecret, sealSecret } from '../../src/webhooks/secret-box.js';
import { postWebhook } from '../../src/webhooks/sender.js';
import { signatureHeader, verifySignature } from '../../src/webhooks/signing.js';
import { isBlockedAddress, obviouslyPrivate } from '../../src/webhooks/url-safety.js';
import { startReceiver } from './fixtures.js';

t.test('signature: sha256=hex HMAC of "<timestamp>.<body>", verified in constant time with a tolerance', async (t) => {
  const body = '{"event":"user.created"}';
  const h = signatureHeader('s3cret', 1700000000, body);
  t.equal(h, 'sha256=' + createHmac('sha256', 's3cret').update(`1700000000.${body}`).digest('hex'));
  t.ok(verifySignature('s3cret', h, '1700000000', body, 300, 1700000100));
  t.notOk(verifySignature('s3cret', h, '1700000000', body, 300, 1700000400), 'too old');
  t.notOk(verifySignature('other', h, '1700000000', body, 300, 1700000000));
  t.notOk(verifySignature('s3cret', h, '1700000000', body + ' ', 300, 1700000000));
  t.notOk(verifySignature('s3cret', undefined, '1700000000', body));
});

t.test('custom headers cannot override the service headers', async (t) => {
  const h = deliveryHeaders({ secret: 'x', event: 'user.created', deliveryId: 'whd_1', body: '{}', custom: { 'x-svc-event': 'no', 'content-type': 'text/plain', 'X-Ok': '1' }, nowS: 5 });
  t.equal(h['X-Svc-Event'], 'user.created');
  t.equal(h['Content-Type'], 'application/json');
  t.notOk('x-svc-event' in h);
  t.equal(h['X-Ok'], '1');
  t.equal(h['X-Svc-Timestamp'], '5');
});

t.test('secrets are sealed with AES-GCM and bound to their webhook', async (t) => {
  const kek = Buffer.alloc(32, 7);
  const s = generateSecret();
  t.match(s, /^whsec_[A-Za-z0-9_-]{43}$/);
  const sealed = sealSecret(kek, 'a', s);
  t.notOk(sealed.includes(Buffer.from(s)));
  t.equal(openSecret(kek, 'a', sealed), s);
  t.throws(() => openSecret(kek, 'b', sealed));
});

t.test('backoff doubles from retry_interval with +-20 % jitter, capped', async (t) => {
  t.equal(backoffMs(1, 30, () => 0.5), 30_000);
  t.equal(backoffMs(3, 30, () => 0.5), 120_000);
  t.equal(backoffMs(2, 10, () => 0), 16_000);
  t.equal(backoffMs(2, 10, () => 1), 24_000);
  t.equal(backoffMs(40, 3600, () => 0.5), MAX_BACKOFF_MS);
});

t.test('filters: roles condition; no condition matches everything; unknown keys match nothing', async (t) => {
  t.ok(filtersMatch({}, 'role.assigned', { role: 'a' }));
  t.ok(filtersMatch({ 'role.assigned': { roles: ['a', 'b'] } }, 'role.assigned', { role: 'b' }));
  t.ok(filtersMatch({ 'role.assigned': { roles: ['a'] } }, 'role.assigned', { roles: ['x', 'a'] }));
  t.notOk(filtersMatch({ 'role.assigned': { roles: ['a'] } }, 'role.assigned', { role: 'c' }));
  t.notOk(filtersMatch({ 'role.assigned': { roles: ['a'] } }, 'role.assigned', {}));
  t.ok(filtersMatch({ 'role.assigned': { roles: ['a'] } }, 'user.created', {}), 'conditions are per event');
  t.notOk(filtersMatch({ 'user.created': { colour: 'red' } }, 'user.created', {}));
});

t.test('blocked destinations: private, loopback, link-local, mapped forms', async (t) => {
  for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fc00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe']) t.ok(isBlockedAddress(ip), ip);
  for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) t.notOk(isBlockedAddress(ip), ip);
  t.ok(obviouslyPrivate('http://localhost:8080/x'));
  t.ok(obviouslyPrivate('http://[::1]/x'));
  t.notOk(obviouslyPrivate('https://example.com/x'));
});

t.test('the sender refuses loopback after DNS resolution unless private destinations are allowed', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const port = new URL(rx.url).port;
  let r = await postWebhook(`http://localhost:${port}/`, {}, '{}', 2000, false);
  t.match(r, { ok: false, status: null, error: /private, loopback or link-local/ });
  r = await postWebhook(`http://127.0.0.1:${port}/`, {}, '{}', 2000, false);
  t.match(r, { ok: false, error: /private/ });
  t.equal(rx.received.length, 0, 'nothing reached the receiver');
  r = await postWebhook(`http://localhost:${port}/`, {}, '{}', 2000, true);
  t.match(r, { ok: true, status: 200, body: 'ok' });
});
