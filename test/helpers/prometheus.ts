import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './env.js';
import { waitFor } from './processes.js';

/** The repository root (tests run from dist/test/<dir>/). */
export const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

/** Runs promtool (Debian's `prometheus` package, installed by ops/run.mjs for the suite). */
export function promtool(args: string[], cwd = repoRoot): { code: number | null; out: string } {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

interface PromResponse<T> { status: string; data: T; error?: string }
export interface PromAlert { labels: Record<string, string>; state: 'pending' | 'firing'; value: string; activeAt: string }

/**
 * A private Prometheus (never the system service): a free port, its TSDB in a temp dir, a generated
 * prometheus.yml that scrapes the given targets and evaluates the given rule files every `intervalSeconds`.
 */
export class PrivatePrometheus {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prometheus-'));
  port = 0;
  private proc: ChildProcess | undefined;
  private log = '';

  get url(): string { return `http://127.0.0.1:${this.port}`; }

  async start(opts: { targets: string[]; ruleFiles: string[]; intervalSeconds?: number }): Promise<void> {
    this.port = await freePort();
    const every = `${opts.intervalSeconds ?? 1}s`;
    const config = [
      'global:',
      `  scrape_interval: ${every}`,
      `  scrape_timeout: ${every}`,
      `  evaluation_interval: ${every}`,
      'rule_files:',
      ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(path.resolve(f))}`),
      'scrape_configs:',
      '  - job_name: svc',
      '    static_configs:',
      `      - targets: [${opts.targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      '',
    ].join('\n');
    fs.writeFileSync(path.join(this.dir, 'prometheus.yml'), config);
    this.proc = spawn('prometheus', [
      `--config.file=${path.join(this.dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(this.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${this.port}`,
      '--storage.tsdb.retention.time=1h',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d: Buffer) => { this.log = (this.log + d.toString()).slice(-20_000); };
    this.proc.stdout!.on('data', keep);
    this.proc.stderr!.on('data', keep);
    const exited = new Promise<never>((_, reject) => this.proc!.once('exit', (code) => reject(new Error(`prometheus exited (${code}): ${this.log}`))));
    exited.catch(() => undefined);
    await Promise.race([exited, waitFor(async () => (await fetch(`${this.url}/-/ready`)).ok, 30_000, 100)]);
  }

  /** What Prometheus printed last (for a failing test's message). */
  output(): string { return this.log; }

  async api<T>(p: string): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${p}`);
    const body = (await res.json()) as PromResponse<T>;
    if (body.status !== 'success') throw new Error(`prometheus ${p}: ${body.error}`);
    return body.data;
  }

  async alerts(): Promise<PromAlert[]> {
    return (await this.api<{ alerts: PromAlert[] }>('alerts')).alerts;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => { p.once('exit', () => resolve()); p.kill('SIGTERM'); });
  }

  async destroy(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
