import { generateKeyPairSync, sign, verify } from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { say } from './util.js';

export interface SignLimit {
  threads: number; seconds: number; signsPerSec: number; perThread: number[]; keyBits: number; payloadBytes: number; singleThreadPerSec: number;
  /** CPU µs (user + system) of one RS256 signature and one verification, one thread, measured in this run. */
  signCpuUs?: number; verifyCpuUs?: number;
}

/** CPU µs per call of `fn`, run for about `ms` on this thread (nothing else of the harness runs meanwhile). */
function cpuPer(fn: () => void, ms: number): number {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < ms) { for (let i = 0; i < 10; i++) fn(); n += 10; }
  const c = process.cpuUsage(c0);
  return Math.round(((c.user + c.system) / n) * 10) / 10;
}

/**
 * The RS256 signing limit of this machine: node:crypto sign (SHA-256, 2048-bit RSA) on every core
 * at once via worker threads, for `seconds`. Nothing else of the harness runs meanwhile.
 */
export async function measureSignLimit(seconds = 5, threads = os.availableParallelism()): Promise<SignLimit> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid: 'k1' })).toString('base64url');
  const claims = Buffer.from(JSON.stringify({ iss: 'https://svc.perf.local', sub: 'perf-client', aud: 'https://api.perf.local', client_id: 'perf-client', scope: 'api:read', iat: 1_700_000_000, exp: 1_700_003_600, jti: 'g1:local:3:0123456789abcdef0123' })).toString('base64url');
  const payload = `${header}.${claims}`;
  const data = Buffer.from(payload);
  const sig = sign('sha256', data, privateKey);
  const publicKey = (await import('node:crypto')).createPublicKey(privateKey);
  const signCpuUs = cpuPer(() => sign('sha256', data, privateKey), 700);
  const verifyCpuUs = cpuPer(() => verify('sha256', data, publicKey, sig), 500);
  // Single-thread figure first (1 s) for reference.
  const t0 = performance.now();
  let single = 0;
  while (performance.now() - t0 < 1000) { sign('sha256', Buffer.from(payload), privateKey); single++; }
  say(`RS256 signing limit: ${threads} threads for ${seconds} s`);
  const until = Date.now() + 500 + seconds * 1000;
  const script = fileURLToPath(new URL('../sign-worker.js', import.meta.url));
  const perThread = await Promise.all(Array.from({ length: threads }, () => new Promise<number>((resolve, reject) => {
    const w = new Worker(script, { workerData: { pem, until, payload, seconds } });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  const total = perThread.reduce((a, b) => a + b, 0);
  const res = { threads, seconds, signsPerSec: Math.round(total / seconds), perThread, keyBits: 2048, payloadBytes: payload.length, singleThreadPerSec: single, signCpuUs, verifyCpuUs };
  say(`RS256 signing limit: ${res.signsPerSec} signatures/s on ${threads} threads (one thread alone: ${single}/s); CPU per signature ${signCpuUs} µs, per verification ${verifyCpuUs} µs`);
  return res;
}
