// Issue 35 item 1: is Ed25519 signing cheap enough to stay on the HTTP thread? One process, one run:
// each algorithm signed inline (as CRYPTO_THREADS=0 does) and through the Signer's Piscina pool (batched,
// as /token does), a token-shaped payload, 64 signatures in flight. For each, per signature: the HTTP
// thread's CPU time (this thread only, from /proc/self/task/<pid>/schedstat, in ns, so a busy machine's
// waits do not count), the process's CPU (every thread), and
// the throughput. Phases alternate (A B A B …) so a shared machine's drift spreads over all of them.
// node dist/perf/eddsa-placement-bench.js [--seconds 2] [--rounds 3] [--threads 2]
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { SigningAlg } from '../src/tokens/algorithms.js';
import type { KeyRing, SigningKey } from '../src/tokens/keys.js';
import { Signer } from '../src/tokens/signer.js';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const SECONDS = Number(arg('seconds', '2'));
const ROUNDS = Number(arg('rounds', '3'));
const THREADS = Number(arg('threads', String(os.availableParallelism())));
const INFLIGHT = 64;

function keyOf(alg: SigningAlg): SigningKey {
  const pair = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKey: KeyObject = pair.privateKey;
  return { kid: `bench-${alg}`, alg, publicKey: pair.publicKey, tenant: null, privateKey, pkcs8: privateKey.export({ format: 'der', type: 'pkcs8' }) };
}
const ALGS: SigningAlg[] = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const keys = new Map(ALGS.map((a) => [a, keyOf(a)]));
/** Just what Signer asks of a ring: the tenant's key (the tenant names the algorithm here). */
const ring = { signingKey: (tenant: string) => keys.get(tenant as SigningAlg)! } as unknown as KeyRing;
const inline = new Signer(ring, { threads: 0 });
const pooled = new Signer(ring, { threads: THREADS, maxQueue: 4096, floor: 4096 });

const now = Math.floor(Date.now() / 1000);
const payload = (i: number) => ({
  iss: 'https://svc.perf.local', sub: 'user-4f1c2a', aud: 'https://api.example.com', exp: now + 3600, iat: now, jti: `AAEAAQ.3d1c0b8e9a7f6e5d${i}`,
  client_id: 'perf-client-1', scope: 'read write', tenant: 'tenant-perf',
});

/** CPU time of this process's main thread (the HTTP thread in svc), ns: the first field of its schedstat. */
const mainThreadNs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);

interface Figures { hotUs: number; cpuUs: number; perSec: number }

/** Signs for SECONDS with INFLIGHT signatures outstanding; per-signature HTTP-thread and process CPU, and throughput. */
async function phase(signer: Signer, alg: SigningAlg): Promise<Figures> {
  let done = 0;
  let i = 0;
  const end = performance.now() + SECONDS * 1000;
  const main0 = mainThreadNs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const lane = async () => { while (performance.now() < end) { await signer.sign(alg, { typ: 'at+jwt' }, payload(i++)); done++; } };
  await Promise.all(Array.from({ length: INFLIGHT }, lane));
  const wall = performance.now() - t0;
  const main = mainThreadNs() - main0;
  const cpu = process.cpuUsage(cpu0);
  return { hotUs: main / 1000 / done, cpuUs: (cpu.user + cpu.system) / done, perSec: done / (wall / 1000) };
}

// Warm-up: every thread imports every key, JIT settles.
for (const alg of ALGS) { await phase(inline, alg); await phase(pooled, alg); }
const runs = new Map<string, Figures[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const alg of ALGS) {
    for (const [where, s] of [['inline', inline], ['pool', pooled]] as const) {
      const f = await phase(s, alg);
      const k = `${alg} ${where}`;
      runs.set(k, [...(runs.get(k) ?? []), f]);
    }
  }
}
await pooled.close();

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const m = (k: string, f: keyof Figures) => mean(runs.get(k)!.map((x) => x[f]));
let commit = 'unknown';
try { commit = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim(); } catch { /* not a checkout */ }
console.log(`EdDSA placement · ${new Date().toISOString()} · commit ${commit} · ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} · ${THREADS} pool threads, ${INFLIGHT} in flight, ${ROUNDS} rounds of ${SECONDS} s per cell (means)`);
console.log('| algorithm, where | HTTP thread CPU µs per signature | process CPU µs per signature | signatures/s | throughput vs RS256 pool |');
console.log('|---|---|---|---|---|');
const base = m('RS256 pool', 'perSec');
for (const alg of ALGS) {
  for (const where of ['inline', 'pool']) {
    const k = `${alg} ${where}`;
    console.log(`| ${alg}, ${where} | ${m(k, 'hotUs').toFixed(1)} | ${m(k, 'cpuUs').toFixed(1)} | ${Math.round(m(k, 'perSec')).toLocaleString('en')} | ${(m(k, 'perSec') / base).toFixed(2)}× |`);
  }
}
const edIn = m('EdDSA inline', 'hotUs');
const edPool = m('EdDSA pool', 'hotUs');
console.log(`\nEdDSA on the HTTP thread: ${edIn.toFixed(1)} µs of that thread per signature inline vs ${edPool.toFixed(1)} µs to hand it to the pool (${(edIn / edPool).toFixed(2)}×); process CPU ${m('EdDSA inline', 'cpuUs').toFixed(1)} vs ${m('EdDSA pool', 'cpuUs').toFixed(1)} µs; RS256 in the pool costs the HTTP thread ${m('RS256 pool', 'hotUs').toFixed(1)} µs.`);
