import t from 'tap';
import net from 'node:net';
import { startTestServer } from '../helpers/server.js';

// Issue 21 item 15: a request line or header block over the limits is answered 414 / 431 with the
// spec's error body (not a dropped connection), as far as uWS lets a request reach us.
const srv = await startTestServer();
t.teardown(() => srv.close());

/** Sends raw HTTP and returns what came back before the server closed. */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(srv.port, '127.0.0.1', () => c.write(text));
    let got = '';
    c.on('data', (d) => { got += d.toString(); });
    c.on('close', () => resolve(got));
    c.on('error', reject);
    setTimeout(() => c.destroy(), 5000);
  });
}

t.test('request target over 8 KiB is 414 with the error body', async (t) => {
  for (const n of [9_000, 100_000]) {
    const out = await raw(`GET /api/admin/users?q=${'a'.repeat(n)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    t.match(out, /^HTTP\/1\.1 414 /, `${n} bytes`);
    t.match(out, /X-Request-ID: /i);
    t.match(out, /"error":"invalid_request"/);
  }
});

t.test('header block over 32 KiB is 431 with the error body', async (t) => {
  for (const n of [40_000, 100_000]) {
    const out = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(n)}\r\n\r\n`);
    t.match(out, /^HTTP\/1\.1 431 /, `${n} bytes`);
    t.match(out, /"error":"invalid_request"/);
  }
});

t.test('ordinary requests are unaffected', async (t) => {
  const out = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nCookie: ${'c'.repeat(4000)}\r\nConnection: close\r\n\r\n`);
  t.match(out, /^HTTP\/1\.1 200 /);
});
