import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (dist/perf/lib/util.js is three levels below it once compiled). */
export const ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  return process.cwd();
})();
export const RESULTS_DIR = path.join(ROOT, 'perf', 'results');

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const say = (msg: string) => console.error(`[perf] ${msg}`);

/** A free TCP port on loopback (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Pcts { n: number; p50: number; p95: number; p99: number; max: number; mean: number }

/** Exact percentiles of a list of milliseconds (nearest-rank). */
export function percentiles(values: ArrayLike<number>): Pcts {
  const n = values.length;
  if (n === 0) return { n: 0, p50: NaN, p95: NaN, p99: NaN, max: NaN, mean: NaN };
  const a = Float64Array.from(values as ArrayLike<number>).sort();
  const at = (q: number) => a[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += a[i]!;
  const r = (x: number) => Math.round(x * 100) / 100;
  return { n, p50: r(at(0.5)), p95: r(at(0.95)), p99: r(at(0.99)), max: r(a[n - 1]!), mean: r(sum / n) };
}

export const basic = (id: string, secret: string) =>
  'Basic ' + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');

export interface HttpAnswer { status: number; headers: Headers; text: string; json: any }

/** One HTTP request with a deadline; the body is parsed as JSON when it is JSON. */
export async function http(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<HttpAnswer> {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), init.timeoutMs ?? 10_000);
  try {
    const res = await fetch(url, { ...init, signal: ctl.signal, redirect: 'manual' });
    const text = await res.text();
    let json: any;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: res.status, headers: res.headers, text, json };
  } finally {
    clearTimeout(t);
  }
}

export function postForm(url: string, form: Record<string, string>, auth?: string, extra: Record<string, string> = {}): Promise<HttpAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...extra };
  if (auth) headers.authorization = auth;
  return http(url, { method: 'POST', headers, body: new URLSearchParams(form).toString() });
}

/** Runs fn over items with at most `limit` in flight; results in input order. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Decodes a JWT's payload without verifying it (the harness only inspects claims it asked for). */
export function jwtPayload(jwt: string): any {
  const part = jwt.split('.')[1];
  if (!part) return undefined;
  try { return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')); } catch { return undefined; }
}

/** A JWT with one character of its signature changed (in the middle, so the decoded bytes change). */
export function tamperSignature(jwt: string): string {
  const dot = jwt.lastIndexOf('.');
  const sig = jwt.slice(dot + 1);
  const i = Math.floor(sig.length / 2);
  const c = sig[i] === 'A' ? 'B' : 'A';
  return jwt.slice(0, dot + 1) + sig.slice(0, i) + c + sig.slice(i + 1);
}

export type Opts = Record<string, string | boolean>;

/** `--key value`, `--key=value`, `--flag`, `--no-flag`; the rest are positionals. */
export function parseArgs(argv: string[]): { pos: string[]; opts: Opts } {
  const pos: string[] = [];
  const opts: Opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) { pos.push(a); continue; }
    const eq = a.indexOf('=');
    if (eq > 0) { opts[a.slice(2, eq)] = a.slice(eq + 1); continue; }
    const key = a.slice(2);
    if (key.startsWith('no-')) { opts[key.slice(3)] = false; continue; }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) { opts[key] = next; i++; } else opts[key] = true;
  }
  return { pos, opts };
}

export const num = (o: Opts, k: string, def: number): number => {
  const v = o[k];
  if (v === undefined || v === true || v === false) return def;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`--${k} must be a number, got "${v}"`);
  return n;
};
export const str = (o: Opts, k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);

export function stamp(d = new Date()): string {
  return d.toISOString().replace(/[:.]/g, '-').replace('T', '_').slice(0, 19);
}
