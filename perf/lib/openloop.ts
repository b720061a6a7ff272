// Open-loop driver for multi-request flows that must wait on something outside HTTP (login: the
// one-time code arrives by e-mail). Arrivals are evenly spaced at a fixed rate, independent of how
// fast answers come back; each arrival runs the scenario's async `flow` over a shared keep-alive
// http.Agent (at most `connections` sockets; requests beyond that queue in the agent and the wait
// counts in their latency). Runs in the load process, in place of autocannon.
import http from 'node:http';

export interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string }
/** Sends one request; rejects with a RequestFailure on socket error or timeout. */
export type Send = (method: string, path: string, headers: Record<string, string>, body?: string) => Promise<Answer>;
/** One arrival: runs the whole flow; `t0` is its scheduled arrival time (performance.now() clock). */
export type Flow = (send: Send, t0: number) => Promise<void>;

export class RequestFailure extends Error {
  /** closed: the step is over and the flow was already counted as unfinished; record nothing. */
  constructor(readonly kind: 'timeout' | 'error' | 'closed', message: string) { super(message); }
}

export interface OpenLoopOpts {
  url: string;
  /** Flows started per second. */
  arrivalsPerSec: number;
  durationS: number;
  connections: number;
  timeoutS: number;
  flow: Flow;
  /** Every HTTP answer, with its latency from send to last byte (ms). */
  onResponse: (status: number, ms: number) => void;
  /** A flow that did not start (too many in flight) or did not finish in the drain time. */
  onDropped: (why: string, n: number) => void;
  /** Bound on flows in flight at once (memory guard); arrivals beyond it are dropped and counted. */
  maxInFlight?: number;
}

export interface OpenLoopResult { windowS: number; totalS: number; started: number; errors: number; timeouts: number }

export async function runOpenLoop(o: OpenLoopOpts): Promise<OpenLoopResult> {
  const u = new URL(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.connections, maxFreeSockets: o.connections });
  const timeoutMs = o.timeoutS * 1000;
  const maxInFlight = o.maxInFlight ?? 20_000;
  let errors = 0;
  let timeouts = 0;
  let closed = false;

  const send: Send = (method, path, headers, body) => new Promise<Answer>((resolve, reject) => {
    if (closed) { reject(new RequestFailure('closed', 'step over')); return; }
    const t = performance.now();
    const h: Record<string, string | number> = { ...headers };
    if (body !== undefined) h['content-length'] = Buffer.byteLength(body);
    const req = http.request({ agent, host: u.hostname, port: u.port, method, path, headers: h }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (closed) { reject(new RequestFailure('closed', 'step over')); return; }
        const status = res.statusCode ?? 0;
        o.onResponse(status, performance.now() - t);
        resolve({ status, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (e) => { if (!closed) errors++; reject(new RequestFailure(closed ? 'closed' : 'error', e.message)); });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new RequestFailure('timeout', `no answer in ${o.timeoutS} s`)));
    req.on('error', (e) => {
      if (!closed) { if (e instanceof RequestFailure && e.kind === 'timeout') timeouts++; else errors++; }
      reject(closed ? new RequestFailure('closed', 'step over') : e instanceof RequestFailure ? e : new RequestFailure('error', e.message));
    });
    req.end(body);
  });

  const total = Math.max(1, Math.round(o.arrivalsPerSec * o.durationS));
  const interval = 1000 / o.arrivalsPerSec;
  const inFlight = new Set<Promise<void>>();
  let started = 0;
  const t0 = performance.now();
  await new Promise<void>((done) => {
    let i = 0;
    const tick = () => {
      const now = performance.now();
      // Every arrival whose time has come (catches up after a late timer), then sleep to the next.
      while (i < total && t0 + i * interval <= now) {
        const at = t0 + i * interval;
        i++;
        if (inFlight.size >= maxInFlight) { o.onDropped('generator: too many logins in flight', 1); continue; }
        started++;
        const p: Promise<void> = o.flow(send, at).catch(() => { /* the flow records its own failures */ }).finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      if (i >= total) { done(); return; }
      setTimeout(tick, Math.max(0, t0 + i * interval - performance.now()));
    };
    tick();
  });
  const windowS = Math.max(o.durationS, (performance.now() - t0) / 1000);
  // Drain: flows started in the window may finish for up to one request timeout after it.
  const drainUntil = performance.now() + timeoutMs;
  while (inFlight.size && performance.now() < drainUntil) {
    await Promise.race([Promise.race(inFlight), new Promise((r) => setTimeout(r, 100))]);
  }
  if (inFlight.size) { closed = true; o.onDropped(`unfinished ${o.timeoutS} s after the step`, inFlight.size); }
  closed = true;
  agent.destroy();
  return { windowS, totalS: (performance.now() - t0) / 1000, started, errors, timeouts };
}
