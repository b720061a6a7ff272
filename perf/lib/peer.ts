import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Target } from './target.js';
import { freePort, say, sleep } from './util.js';

/** Starts node-oidc-provider (perf/peer-server.ts) as one child process on loopback. */
export async function startPeer(): Promise<Target> {
  const port = await freePort();
  const script = fileURLToPath(new URL('../peer-server.js', import.meta.url));
  const child = fork(script, [], {
    env: { ...process.env, PEER_PORT: String(port), NODE_ENV: 'production', DEBUG: '' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let exited = false;
  child.on('exit', () => { exited = true; });
  const info = await new Promise<any>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('oidc-provider did not start in 30 s')), 30_000);
    child.on('message', (m: any) => { if (m?.type === 'peer:ready') { clearTimeout(t); resolve(m); } });
    child.on('exit', (code) => { clearTimeout(t); reject(new Error(`oidc-provider exited (${code})`)); });
  });
  const url = `http://127.0.0.1:${info.port}`;
  say(`oidc-provider ready at ${url} (pid ${child.pid})`);
  return {
    name: 'oidc-provider', url,
    pids: () => (exited || !child.pid ? [] : [child.pid]),
    peer: { tokenPath: '/token', introspectPath: '/token/introspection', revokePath: '/token/revocation', cc: info.cc, short: info.short, rs: info.rs, scope: info.scope },
    setting: 'node-oidc-provider 9.13.3, one process (no cluster), built-in memory adapter (in-process LRU, 1000 entries), opaque client_credentials tokens (no resource indicators, nothing signed per token), introspection + revocation enabled, NODE_ENV=production',
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      for (let i = 0; i < 50 && !exited; i++) await sleep(100);
      if (!exited) child.kill('SIGKILL');
    },
  };
}
