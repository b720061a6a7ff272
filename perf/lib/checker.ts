/** Per-step bookkeeping of answer checks, filled by the scenarios' onResponse hooks in the load process. */
export class Checker {
  checked = 0;
  correct = 0;
  shed = 0;
  /** Answers that did not match what the request's category must get, by "<kind>:<what came back>". */
  misclassified: Record<string, number> = {};
  /** Requests sent per category (valid, expired, actor...). */
  kinds: Record<string, number> = {};
  /** Whole-flow latencies (login: first request sent to token answer), ms. */
  flows: number[] = [];
  flowsFailed: Record<string, number> = {};
  /** Free-form counters a scenario wants in the report. */
  notes: Record<string, number> = {};

  sent(kind: string): void { this.kinds[kind] = (this.kinds[kind] ?? 0) + 1; }
  ok(): void { this.checked++; this.correct++; }
  /** A 503 while over capacity is load shedding, not a wrong answer; counted apart. */
  shedOne(): void { this.checked++; this.shed++; }
  /**
   * A 429 from a configured rate limit (with Retry-After) is the server doing what it was set to do,
   * not a wrong answer: counted as checked and under notes["429 rate limited"], never misclassified.
   */
  limited(): void { this.checked++; this.note('429 rate limited'); }
  miss(kind: string, got: string): void {
    this.checked++;
    const k = `${kind}:${got}`;
    this.misclassified[k] = (this.misclassified[k] ?? 0) + 1;
  }
  flow(ms: number): void { if (this.flows.length < 2_000_000) this.flows.push(ms); }
  flowFail(why: string): void { this.flowsFailed[why] = (this.flowsFailed[why] ?? 0) + 1; }
  note(k: string, n = 1): void { this.notes[k] = (this.notes[k] ?? 0) + n; }
  /** Timings a scenario wants summarised (p50/p95/max land in notes as "<k> p50 ms" ...). */
  samples: Record<string, number[]> = {};
  sample(k: string, ms: number): void { const a = (this.samples[k] ??= []); if (a.length < 1_000_000) a.push(ms); }
  get misclassifiedTotal(): number { return Object.values(this.misclassified).reduce((a, b) => a + b, 0); }
}

/** The shape autocannon takes in `requests` (setupRequest may return null to restart the sequence). */
export interface ReqSpec {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: any, ctx: any) => any;
  onResponse?: (status: number, body: string, ctx: any, headers: Record<string, string | string[]>) => void;
}

/** Picks an item by weight from a cumulative table. */
export function picker<T>(table: Array<[T, number]>): () => T {
  const total = table.reduce((a, [, w]) => a + w, 0);
  const cum: Array<[T, number]> = [];
  let acc = 0;
  for (const [v, w] of table) { acc += w / total; cum.push([v, acc]); }
  return () => {
    const r = Math.random();
    for (const [v, c] of cum) if (r < c) return v;
    return cum[cum.length - 1]![0];
  };
}

export const rnd = <T>(arr: T[]): T => arr[(Math.random() * arr.length) | 0]!;

export function header(h: Record<string, string | string[]>, name: string): string[] {
  const out: string[] = [];
  const want = name.toLowerCase();
  for (const k in h) {
    if (k.toLowerCase() !== want) continue;
    const v = h[k]!;
    if (Array.isArray(v)) out.push(...v); else out.push(v);
  }
  return out;
}

export function safeJson(s: string): any {
  try { return JSON.parse(s); } catch { return undefined; }
}
