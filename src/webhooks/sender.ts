import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { guardedLookup, isBlockedAddress, UnsafeDestination, urlHost } from './url-safety.js';

export interface SendResult {
  ok: boolean;
  status: number | null;
  /** First bytes of the receiver's answer (at most RESPONSE_BODY_LIMIT). */
  body: string | null;
  durationMs: number;
  error: string | null;
}

export const RESPONSE_BODY_LIMIT = 1024;

// Keep-alive pools: most deliveries go to a handful of receivers, and a fresh TLS handshake per
// delivery would dominate the cost. Sockets are only ever opened through guardedLookup (or to a
// checked literal), so reuse never skips the destination check.
const agents = {
  guarded: { http: new http.Agent({ keepAlive: true, maxSockets: 64, lookup: guardedLookup }), https: new https.Agent({ keepAlive: true, maxSockets: 64, lookup: guardedLookup }) },
  open: { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64 }) },
};

/**
 * POSTs a body to a webhook URL. Never follows redirects (a 3xx is a failure), enforces an overall
 * deadline, and refuses private destinations after DNS resolution unless allowPrivate.
 */
export function postWebhook(url: string, headers: Record<string, string>, body: string | Buffer, timeoutMs: number, allowPrivate: boolean): Promise<SendResult> {
  const started = process.hrtime.bigint();
  const elapsed = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: Omit<SendResult, 'durationMs'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...r, durationMs: elapsed() });
    };
    let u: URL;
    try { u = new URL(url); } catch { finish({ ok: false, status: null, body: null, error: 'invalid URL' }); return; }
    const host = urlHost(u);
    if (!allowPrivate && net.isIP(host) && isBlockedAddress(host)) {
      finish({ ok: false, status: null, body: null, error: new UnsafeDestination(host).message });
      return;
    }
    const lib = u.protocol === 'https:' ? https : http;
    const pool = allowPrivate ? agents.open : agents.guarded;
    const req = lib.request(u, {
      method: 'POST',
      agent: u.protocol === 'https:' ? pool.https : pool.http,
      headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => { if (size < RESPONSE_BODY_LIMIT) { chunks.push(c); size += c.length; } });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8');
        const ok = status >= 200 && status < 300;
        finish({ ok, status, body: text, error: ok ? null : status >= 300 && status < 400 ? `redirect (HTTP ${status}) not followed` : `HTTP ${status}` });
      });
      res.on('error', (err) => finish({ ok: false, status: res.statusCode ?? null, body: null, error: describe(err) }));
    });
    timer = setTimeout(() => {
      req.destroy();
      finish({ ok: false, status: null, body: null, error: `timeout after ${Math.round(timeoutMs / 1000)} s` });
    }, timeoutMs);
    req.on('error', (err) => finish({ ok: false, status: null, body: null, error: describe(err) }));
    req.end(body);
  });
}

/** A short, non-sensitive description of a network failure (no stack, no internals). */
function describe(err: Error & { code?: string }): string {
  if (err instanceof UnsafeDestination) return err.message;
  switch (err.code) {
    case 'ECONNREFUSED': return 'connection refused';
    case 'ECONNRESET': return 'connection reset';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'host not found';
    case 'ETIMEDOUT': return 'connection timed out';
    case 'EHOSTUNREACH': case 'ENETUNREACH': return 'host unreachable';
    default: return err.code ? `network error (${err.code})` : 'network error';
  }
}
