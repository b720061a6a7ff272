import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunOrder, StepRaw } from '../load-child.js';

/** The harness side of the load process (perf/load-child.ts), one per harness run. */
export class LoadGen {
  private child: ChildProcess;
  private seq = 0;
  private waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private exited = false;

  constructor() {
    const script = fileURLToPath(new URL('../load-child.js', import.meta.url));
    this.child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, NODE_ENV: 'production' } });
    this.child.on('message', (m: any) => {
      const w = this.waiting.get(m?.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.ok) w.resolve(m); else w.reject(new Error(`load process: ${m.error}`));
    });
    this.child.on('exit', (code) => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error(`load process exited (${code})`));
      this.waiting.clear();
    });
  }

  get pid(): number { return this.child.pid ?? 0; }

  private ask(msg: object, timeoutMs: number): Promise<any> {
    if (this.exited) return Promise.reject(new Error('load process is gone'));
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { this.waiting.delete(id); reject(new Error('load process did not answer in time')); }, timeoutMs);
      this.waiting.set(id, { resolve: (v) => { clearTimeout(t); resolve(v); }, reject: (e) => { clearTimeout(t); reject(e); } });
      this.child.send({ ...msg, id });
    });
  }

  async setFixtures(fixturesId: string, fixtures: unknown): Promise<void> { await this.ask({ type: 'fixtures', fixturesId, fixtures }, 60_000); }
  async startSmtp(port = 0): Promise<number> { return (await this.ask({ type: 'smtp', port }, 10_000)).port; }
  async run(order: Omit<RunOrder, 'id'>): Promise<StepRaw> {
    return (await this.ask({ type: 'run', order }, (order.durationS + order.timeoutS + 60) * 1000)).result;
  }
  async close(): Promise<void> {
    if (this.exited) return;
    await this.ask({ type: 'exit' }, 5000).catch(() => this.child.kill('SIGKILL'));
  }
  kill(): void { if (!this.exited) this.child.kill('SIGKILL'); }
}
