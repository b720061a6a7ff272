// The webhooks scenario's receiver (perf/lib/webhooks.ts), a child process of the harness so its CPU
// and event loop are its own: a node:http server on loopback that checks every delivery's signature
// the way docs/webhooks.md tells receivers to, and notes for each event (data.user_id = "<prefix><seq>")
// how many times it arrived and when it first did (wall clock, ms with sub-ms precision).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { verifySignature } from '../src/webhooks/signing.js';

const secret = process.env.WH_SECRET ?? '';
const prefix = process.env.WH_PREFIX ?? 'perf-';
const capacity = Number(process.env.WH_CAPACITY ?? 1_000_000);
const counts = new Uint16Array(capacity);
const firstAt = new Float64Array(capacity);
let badSignature = 0;
let badBody = 0;
let total = 0;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const body = Buffer.concat(chunks).toString('utf8');
    total++;
    if (!verifySignature(secret, req.headers['x-svc-signature'] as string | undefined, req.headers['x-svc-timestamp'] as string | undefined, body)) {
      badSignature++;
      res.writeHead(401).end('bad signature');
      return;
    }
    let seq = -1;
    try {
      const id = (JSON.parse(body) as { data?: { user_id?: string } }).data?.user_id ?? '';
      if (id.startsWith(prefix)) seq = Number(id.slice(prefix.length));
    } catch { /* counted below */ }
    if (!(seq >= 0 && seq < capacity)) { badBody++; res.writeHead(400).end('bad body'); return; }
    if (counts[seq]! === 0) firstAt[seq] = at;
    counts[seq]!++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
// Longer than the worker's idle sockets live, so the receiver never closes a pooled connection under it.
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!({ type: 'listening', port: (server.address() as AddressInfo).port }));

// The harness asks for the events [from, to): how many times each arrived, and when first.
process.on('message', (m: { type: string; from?: number; to?: number }) => {
  if (m.type === 'report') {
    const from = m.from ?? 0;
    const to = Math.min(m.to ?? capacity, capacity);
    process.send!({ type: 'report', total, badSignature, badBody, counts: Array.from(counts.subarray(from, to)), firstAt: Array.from(firstAt.subarray(from, to)) });
  } else if (m.type === 'count') {
    process.send!({ type: 'count', total });
  } else if (m.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
