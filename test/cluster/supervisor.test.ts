import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';

const cli = path.resolve('dist/src/cli.js');

function children(pid: number): number[] {
  const out = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.trim();
  return out ? out.split('\n').map(Number) : [];
}

async function startCluster(t: { teardown(fn: () => unknown): void }, env: Record<string, string> = {}) {
  const port = await freePort();
  const proc = spawn(process.execPath, [cli, 'start'], {
    env: { ...process.env, PORT: String(port), WORKERS: '2', QUEUE_WORKERS: 'false', LOG_LEVEL: 'warn', NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d) => { stderr += d; });
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/healthz`)).ok && children(proc.pid!).length === 2, 20_000, 100);
  return { proc, url, stderr: () => stderr };
}

t.test('a killed HTTP worker is replaced while the others keep serving', async (t) => {
  const { proc, url } = await startCluster(t);
  const before = children(proc.pid!);
  t.equal(before.length, 2);
  process.kill(before[0]!, 'SIGKILL');
  // Fresh connections during and after the kill land on the surviving worker (SO_REUSEPORT). A connection
  // the kernel had already queued on the dying worker's socket is reset; an idempotent GET retried once
  // (as HTTP clients do) must then succeed.
  let ok = 0;
  for (let i = 0; i < 40; i++) {
    const status = await getFresh(`${url}/healthz`).catch(() => getFresh(`${url}/healthz`));
    if (status === 200) ok++;
  }
  t.equal(ok, 40, 'every request after the kill succeeded');
  await waitFor(() => { const now = children(proc.pid!); return now.length === 2 && !now.includes(before[0]!); }, 10_000, 100);
  t.pass('a replacement worker was forked');
  const res = await fetch(`${url}/readyz`);
  t.equal(res.status, 200);
});

/** A GET on a new connection each time (no keep-alive), so the kernel picks a listening worker per request. */
function getFresh(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); }).on('error', reject);
  });
}
