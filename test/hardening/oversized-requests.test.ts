import t from 'tap';
import net from 'node:net';
import { startTestServer } from '../helpers/server.js';

// Issue 21 item 15: a request line or header block over the limits is answered 414 / 431 with the
// spec's error body (not a dropped connection), as far as uWS lets a request reach us.
// Issue 29 item 5: every such answer, and every 413, reaches the client, many times over and while the
// client is still sending its body (closing on unread bytes used to reset the connection first).
const srv = await startTestServer();
t.teardown(() => srv.close());

interface Answer { text: string; error: string | null; complete: boolean }

/**
 * Sends raw HTTP and reads one answer: done when its body is complete (Content-Length or the last chunk),
 * when the server closes, or after 10 s. `body` goes in 64 KiB writes as fast as the socket takes them,
 * the way curl uploads without `Expect: 100-continue`. `gapAfter` sends the first that many bytes of the
 * head alone, 20 ms before the rest (two reads for uWS).
 */
function send(head: string, body: Buffer = Buffer.alloc(0), gapAfter = 0): Promise<Answer> {
  return new Promise((resolve) => {
    let text = '';
    let error: string | null = null;
    let settled = false;
    const c = net.connect(srv.port, '127.0.0.1', async () => {
      try {
        if (gapAfter) { c.write(head.slice(0, gapAfter)); await new Promise((r) => setTimeout(r, 20)); c.write(head.slice(gapAfter)); } else c.write(head);
        for (let i = 0; i < body.length && !c.destroyed; i += 65536) {
          c.write(body.subarray(i, i + 65536));
          await new Promise((r) => setImmediate(r));
        }
      } catch { /* the error event says what happened */ }
    });
    const finish = () => { if (settled) return; settled = true; c.destroy(); resolve({ text, error, complete: isComplete(text) }); };
    c.on('data', (d) => { text += d.toString('latin1'); if (isComplete(text)) finish(); });
    c.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message; });
    c.on('close', finish);
    setTimeout(finish, 10_000);
  });
}

function isComplete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end);
  const len = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (len) return text.length - end - 4 >= Number(len[1]);
  return /\r\ntransfer-encoding: *chunked/i.test(head) && text.includes('\r\n0\r\n\r\n', end);
}

/** The answer's body, chunked or not. */
function bodyOf(text: string): string {
  const end = text.indexOf('\r\n\r\n');
  const rest = text.slice(end + 4);
  if (!/\r\ntransfer-encoding: *chunked/i.test(text.slice(0, end))) return rest;
  let out = '';
  for (let at = 0; ;) {
    const nl = rest.indexOf('\r\n', at);
    const size = parseInt(rest.slice(at, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    at = nl + 2 + size + 2;
  }
}

/** Sends the same request `n` times and counts the answers that were not a complete `status` with the spec body. */
async function failures(n: number, status: number, head: () => string, body?: Buffer, gapAfter = 0): Promise<string[]> {
  const bad: string[] = [];
  for (let i = 0; i < n; i++) {
    const a = await send(head(), body, gapAfter);
    let ok = a.complete && a.text.startsWith(`HTTP/1.1 ${status} `) && /\r\nX-Request-ID: /i.test(a.text);
    if (ok) { try { ok = JSON.parse(bodyOf(a.text)).error === 'invalid_request'; } catch { ok = false; } }
    if (!ok) bad.push(`${a.text.slice(0, 40).replace(/\r\n/g, ' | ') || '(nothing)'}${a.error ? ` ${a.error}` : ''}`);
  }
  return bad;
}

const line = (n: number, method = 'GET', extra = '') => () => `${method} /api/admin/users?q=${'a'.repeat(n)} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
const headers = (n: number, method = 'GET', extra = '') => () => `${method} /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(n)}\r\n${extra}\r\n`;
const post = (path: string, extra: string) => () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;
const chunked = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
const MB = 1024 * 1024;
const TRIES = 30;

t.test('request target over 8 KiB is 414 with the error body', async (t) => {
  for (const n of [9_000, 100_000]) {
    const out = (await send(line(n)())).text;
    t.match(out, /^HTTP\/1\.1 414 /, `${n} bytes`);
    t.match(out, /X-Request-ID: /i);
    t.match(out, /"error":"invalid_request"/);
  }
});

t.test('header block over 32 KiB is 431 with the error body', async (t) => {
  for (const n of [40_000, 100_000]) {
    const out = (await send(headers(n)())).text;
    t.match(out, /^HTTP\/1\.1 431 /, `${n} bytes`);
    t.match(out, /"error":"invalid_request"/);
  }
});

t.test(`every oversized head that reaches the server is answered, ${TRIES} times in a row`, async (t) => {
  // Up to 64 KiB a head is one loopback segment, so uWS reads it at once and hands it to us.
  for (const n of [9_000, 40_000, 60_000]) t.same(await failures(TRIES, 414, line(n)), [], `${n} byte request target: 414 every time`);
  for (const n of [33_000, 45_000, 60_000]) t.same(await failures(TRIES, 431, headers(n)), [], `${n} byte header block: 431 every time`);
});

t.test(`a body over the limit is answered 413 every time while the client is still sending (${TRIES} tries each)`, async (t) => {
  const two = Buffer.alloc(2 * MB, 'a');
  // Refused from Content-Length before any of the body is read.
  t.same(await failures(TRIES, 413, post('/api/admin/users', `Content-Length: ${two.length}\r\n`), two), [], '2 MiB with Content-Length');
  // Refused while reading, once the body passes the limit.
  t.same(await failures(TRIES, 413, post('/api/admin/users', 'Transfer-Encoding: chunked\r\n'), chunked(two)), [], '2 MiB chunked');
  t.same(await failures(TRIES, 413, post('/token', 'Transfer-Encoding: chunked\r\n'), chunked(two)), [], '2 MiB chunked to an OAuth endpoint');
  const ten = Buffer.alloc(10 * MB, 'a');
  t.same(await failures(10, 413, post('/api/admin/users', `Content-Length: ${ten.length}\r\n`), ten), [], '10 MiB with Content-Length');
  t.same(await failures(10, 413, post('/api/admin/users', 'Transfer-Encoding: chunked\r\n'), chunked(ten)), [], '10 MiB chunked');
});

t.test('an oversized head with a body is answered while the body is still arriving', async (t) => {
  const body = Buffer.alloc(2 * MB, 'a');
  t.same(await failures(TRIES, 414, line(20_000, 'POST', `Content-Length: ${body.length}\r\n`), body), [], '414 with a 2 MiB body');
  t.same(await failures(TRIES, 431, headers(40_000, 'POST', `Content-Length: ${body.length}\r\n`), body), [], '431 with a 2 MiB body');
});

t.test('after a refused body is drained, the connection serves the next request', async (t) => {
  const body = Buffer.alloc(200_000, 'a');
  const text = await new Promise<string>((resolve) => {
    let got = '';
    const c = net.connect(srv.port, '127.0.0.1', () => {
      c.write(post('/api/admin/users', `Content-Length: ${body.length}\r\n`)());
      c.write(body);
      c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    });
    c.on('data', (d) => { got += d.toString('latin1'); });
    c.on('error', () => {});
    c.on('close', () => resolve(got));
    setTimeout(() => c.destroy(), 10_000);
  });
  t.match(text, /^HTTP\/1\.1 413 /);
  t.ok(isComplete(text), 'the 413 is complete');
  t.match(text, /^HTTP\/1\.1 413 [^]*"error":"invalid_request"[^]*HTTP\/1\.1 200 /, 'then the next request is answered');
});

t.test('a refused body that never arrives still gets its whole answer at once', async (t) => {
  // Content-Length promises 100 MiB and 1 byte follows (as from a client that waits for the answer first).
  const a = await send(post('/api/admin/users', `Content-Length: ${100 * MB}\r\n`)(), Buffer.from('a'));
  t.ok(a.complete, 'complete');
  t.match(a.text, /^HTTP\/1\.1 413 /);
  t.match(bodyOf(a.text), /"error":"invalid_request"/);
});

t.test('ordinary requests are unaffected', async (t) => {
  const out = (await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nCookie: ${'c'.repeat(4000)}\r\nConnection: close\r\n\r\n`)).text;
  t.match(out, /^HTTP\/1\.1 200 /);
});

// What the pinned uWebSockets.js build (20.30) drops in its C++ parser before any JavaScript runs, so no
// answer is possible: a head that does not arrive in one read once it passes 4 KiB (its fallback buffer,
// fixed in this build: it does not read UWS_HTTP_MAX_HEADERS_SIZE), any head past the socket's receive
// buffer (128 KiB here, so never read at once), and more than 48 headers. The size cases turn into passes
// with a build that reads UWS_HTTP_MAX_HEADERS_SIZE set above them (docs/decisions.md, issue 29 item 5).
t.test('heads the pinned uWS parser drops (todo: answered once uWS reads UWS_HTTP_MAX_HEADERS_SIZE)', async (t) => {
  const todo = { todo: 'needs a uWebSockets.js build that reads UWS_HTTP_MAX_HEADERS_SIZE' };
  for (const n of [100_000, 120_000, 256 * 1024, 512 * 1024, MB]) {
    t.same(await failures(5, 414, line(n)), [], `${n} byte request target`, todo);
    t.same(await failures(5, 431, headers(n)), [], `${n} byte header block`, todo);
  }
  t.same(await failures(5, 414, line(9_000), undefined, 100), [], '9 KB request target arriving in two reads', todo);
  t.same(await failures(5, 431, headers(40_000), undefined, 100), [], '40 KB header block arriving in two reads', todo);
  const many = () => `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 60 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`;
  // The header count is fixed when uWS is compiled (48 headers here; 100 in later builds), whatever the environment says.
  t.match((await send(many())).text, /^HTTP\/1\.1 (200|431) /, '60 headers get an answer', { todo: 'needs a uWebSockets.js build that answers past its compiled header count' });
});
