import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Target } from './target.js';
import { freePort } from './util.js';

/** `processes` bare uWS servers on one port (SO_REUSEPORT), as svc runs its HTTP processes: the cpu run's floor. */
export async function startBare(processes: number): Promise<Target> {
  const port = await freePort();
  const script = fileURLToPath(new URL('../bare-server.js', import.meta.url));
  const children: ChildProcess[] = [];
  for (let i = 0; i < processes; i++) {
    const child = fork(script, [String(port)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`bare server exited (${code}) before listening on ${port}`)));
    });
  }
  return {
    name: 'bare', url: `http://127.0.0.1:${port}`,
    pids: () => children.map((c) => c.pid!).filter(Boolean),
    setting: `${processes} bare uWebSockets.js processes on one port`,
    async stop() { for (const c of children) c.kill(); },
  };
}
