import fs from 'node:fs';
import path from 'node:path';
import type { Soak, Step } from './ladder.js';
import { KINDS } from './cpucost.js';
import type { SignLimit } from './signlimit.js';
import { RESULTS_DIR, ROOT } from './util.js';
import type { WebhookRun } from './webhooks.js';

export interface ScenarioRun {
  scenario: string;
  target: 'svc' | 'oidc-provider' | 'bare';
  unit: string;
  describe: string;
  setting: string;
  available: boolean;
  unavailable?: string;
  calibration: Record<string, string>;
  notes: string[];
  steps: Step[];
  capacity?: number;
  /** Highest correct-answer rate of an unsaturated step whose p95 met the issue's target. */
  capacityAtSlo?: number;
  sloMs?: number;
  overload?: Step;
  /** Issue 19 1c: 10 s at 5× capacity, then the time until a signature is served promptly again. */
  burst?: { step: Step; drainMs: number | undefined; probes: Array<{ atMs: number; status: number; ms: number }> };
  soak?: Soak;
  /** `perf -- cpu`: the saturated step's CPU per request and each paced step's ratio to it. */
  cpu?: {
    saturatedUs?: number; limit: number; flags: Array<{ offered: number; ratio: number; flagged: boolean }>;
    /** Issue 35 item 4: this scenario's paced/saturated ratio against the bare server's, same run. */
    floor?: { rate: number; ratio: number; bareRatio: number; relative: number; limit: number; met: boolean };
  };
}

export interface Comparison {
  scenario: string;
  steps: Array<{ offered: number; svc?: number; peer?: number; ratio?: number; svcP95?: number; peerP95?: number }>;
  capacity: { svc?: number; peer?: number; ratio?: number };
}

export interface Report {
  meta: { date: string; commit: string; dirty: boolean; node: string; nproc: number; cpu: string; memGb: number; command: string; options: Record<string, unknown>; loadgen: string; loadavgStart: number[]; loadavgEnd?: number[]; busyWarning?: string };
  runs: ScenarioRun[];
  signLimit?: SignLimit;
  comparisons?: Comparison[];
  targets?: Array<{ target: string; measured: string; limit: string; pass: boolean | undefined }>;
  webhooks?: WebhookRun;
  ccVsSignLimit?: { svcCapacity?: number; peerCapacity?: number; signLimit: number; svcFraction?: number; peerFraction?: number };
}

const esc = (s: unknown) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const fmt = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? '–' : x >= 100 ? String(Math.round(x)) : String(Math.round(x * 10 ** d) / 10 ** d));

interface Series { name: string; color: string; points: Array<[number, number]>; dashed?: boolean }

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** A self-contained SVG line chart (linear axes, points marked), no scripts or external assets. */
export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[], opts: { diagonal?: boolean; hline?: { y: number; label: string } } = {}): string {
  const W = 520, H = 300, L = 64, R = 16, T = 30, B = 48;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  if (!xs.length) return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="60"><text x="10" y="30" font-size="13">${esc(title)}: no data</text></svg>`;
  const xMax = niceMax(Math.max(...xs));
  let yMax = niceMax(Math.max(...ys, opts.diagonal ? Math.max(...xs) : 0, opts.hline?.y ?? 0));
  if (!(yMax > 0)) yMax = 1;
  const X = (x: number) => L + (x / xMax) * (W - L - R);
  const Y = (y: number) => H - B - (Math.min(y, yMax) / yMax) * (H - T - B);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui,sans-serif" font-size="11">`);
  out.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="13" font-weight="600">${esc(title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const yv = (yMax * i) / 5, xv = (xMax * i) / 5;
    out.push(`<line x1="${L}" x2="${W - R}" y1="${Y(yv)}" y2="${Y(yv)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${L - 6}" y="${Y(yv) + 4}" text-anchor="end">${fmt(yv, 0)}</text>`);
    out.push(`<text x="${X(xv)}" y="${H - B + 16}" text-anchor="middle">${fmt(xv, 0)}</text>`);
  }
  out.push(`<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`);
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(14 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  if (opts.diagonal) out.push(`<line x1="${X(0)}" y1="${Y(0)}" x2="${X(Math.min(xMax, yMax))}" y2="${Y(Math.min(xMax, yMax))}" stroke="#aaa" stroke-dasharray="4 4"/><text x="${X(Math.min(xMax, yMax)) - 4}" y="${Y(Math.min(xMax, yMax)) + 14}" text-anchor="end" fill="#888">achieved = offered</text>`);
  if (opts.hline) out.push(`<line x1="${L}" x2="${W - R}" y1="${Y(opts.hline.y)}" y2="${Y(opts.hline.y)}" stroke="#c00" stroke-dasharray="6 3"/><text x="${W - R - 4}" y="${Y(opts.hline.y) - 4}" text-anchor="end" fill="#c00">${esc(opts.hline.label)}</text>`);
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p[1])).sort((a, b) => a[0] - b[0]);
    if (!pts.length) return;
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''} points="${pts.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ')}"/>`);
    for (const p of pts) out.push(`<circle cx="${X(p[0]).toFixed(1)}" cy="${Y(p[1]).toFixed(1)}" r="3" fill="${s.color}"><title>${esc(s.name)}: ${fmt(p[0])} → ${fmt(p[1])}</title></circle>`);
    out.push(`<rect x="${L + 10}" y="${T + 6 + i * 16}" width="12" height="3" fill="${s.color}"/><text x="${L + 28}" y="${T + 11 + i * 16}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('');
}

const COLORS: Record<string, string> = { svc: '#1f6feb', 'oidc-provider': '#d97706', bare: '#6b7280' };

function stepRows(run: ScenarioRun, steps: Step[]): string {
  const login = run.unit === 'logins/s';
  const head = `<tr><th>kind</th><th>offered ${esc(run.unit)}</th><th>achieved</th><th>good/s</th><th>conns</th>${login ? '<th>login p50/p95/p99 ms</th><th>failed logins by step</th><th>mail wait p50/p95 ms</th>' : ''}<th>p50</th><th>p95</th><th>p99</th><th>max</th><th>p95 2xx</th><th>p95 503</th><th>non-2xx by status</th><th>misclassified</th><th>err/timeouts</th><th>CPU µs/req</th><th>server CPU %</th><th>server RSS MB</th><th>loadgen CPU %</th><th>storage CPU %</th><th>saturated</th></tr>`;
  const rows = steps.map((s) => `<tr class="${s.saturated ? 'sat' : ''}"><td>${s.kind}</td><td>${fmt(s.offered)}</td><td>${fmt(s.achieved)}</td><td>${fmt(s.good)}</td><td>${s.connections}</td>` +
    (login ? `<td>${fmt(s.flows?.p50)} / ${fmt(s.flows?.p95)} / ${fmt(s.flows?.p99)}</td><td>${esc(Object.entries(s.flowsFailed ?? {}).map(([k, v]) => `${k}: ${v}`).join(' · ') || '–')}</td><td>${fmt(s.notes?.['mail wait p50 ms'])} / ${fmt(s.notes?.['mail wait p95 ms'])}${stepLatencies(s)}</td>` : '') +
    `<td>${fmt(s.latencyServed.p50)}</td><td>${fmt(s.latencyServed.p95)}</td><td>${fmt(s.latencyServed.p99)}</td><td>${fmt(s.latencyServed.max)}</td><td>${fmt(s.latency2xx.p95)}</td><td>${fmt(s.latencyShed.p95)}</td>` +
    `<td>${esc(Object.entries(s.non2xx).map(([k, v]) => `${k}:${v}`).join(' ') || '–')}</td><td>${s.misclassifiedTotal}${s.misclassifiedTotal ? ` <small>${esc(JSON.stringify(s.misclassified))}</small>` : ''}</td>` +
    `<td>${s.errors}/${s.timeouts}</td><td>${fmt(s.cost?.totalUs)}</td><td>${fmt(s.serverCpuPct)} <small>${esc(s.procs.map((p) => `${p.label}:${fmt(p.cpuPct)}`).join(' '))}</small></td><td>${fmt(s.serverRssMb)}</td><td>${fmt(s.loadgenCpuPct)}</td><td>${esc((s.storage ?? []).map((g) => `${g.label}:${fmt(g.cpuPct)}`).join(' ') || '–')}</td><td>${s.saturated ? esc(s.why) : ''}</td></tr>`).join('');
  return `<table>${head}${rows}</table>`;
}

/** Login: each step's own latency (p50/p95 ms) and the e-mail path's CPU per login, in small print. */
function stepLatencies(s: Step): string {
  const steps = Object.keys(s.notes ?? {}).filter((k) => /^\d .* p95 ms$/.test(k)).map((k) => k.slice(0, -' p95 ms'.length));
  const mail = s.cost && s.achieved > 0 ? ` · e-mail path ${fmt((s.cost.us['email path'] * s.cost.requests) / (s.achieved * s.durationS))} µs CPU per login` : '';
  return steps.length ? `<br><small>${steps.map((k) => `${esc(k)} ${fmt(s.notes[`${k} p50 ms`])}/${fmt(s.notes[`${k} p95 ms`])}`).join(' · ')}${mail}</small>` : '';
}

export function renderHtml(rep: Report): string {
  const parts: string[] = [];
  const m = rep.meta;
  parts.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svc perf ${esc(m.date)}</title><style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}table{border-collapse:collapse;font-size:12px;margin:8px 0 16px}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:right;vertical-align:top}th{background:#f4f4f4}tr.sat td{background:#fff4e5}
.charts{display:flex;flex-wrap:wrap;gap:12px}.note{color:#555;font-size:13px}.bad{color:#b00;font-weight:600}code{background:#f4f4f4;padding:1px 4px}
small{color:#666}</style></head><body>`);
  parts.push(`<h1>svc performance run</h1><p class="note">${esc(m.date)} · commit <code>${esc(m.commit)}${m.dirty ? ' (+uncommitted changes)' : ''}</code> · ${m.nproc} cores (${esc(m.cpu)}), ${m.memGb} GB · Node ${esc(m.node)} · <code>${esc(m.command)}</code><br>Load generator: ${esc(m.loadgen)}. Latencies are per request in ms (login also per whole login); “p50/p95/p99/max” are of accepted answers (everything but 503 sheds). Rows shaded orange are saturated.<br>Load average (1/5/15 min) at start ${esc(m.loadavgStart?.join(' / '))}, at end ${esc(m.loadavgEnd?.join(' / ') ?? '–')}.${m.busyWarning ? ` <span class="bad">${esc(m.busyWarning)}</span>` : ''}</p>`);
  if (rep.targets?.length) {
    parts.push(`<h2>Targets (issue 19), same run</h2><table><tr><th>target</th><th>measured</th><th>limit</th><th>result</th></tr>${rep.targets.map((t) => `<tr><td>${esc(t.target)}</td><td>${esc(t.measured)}</td><td>${esc(t.limit)}</td><td class="${t.pass === false ? 'bad' : ''}">${t.pass === undefined ? 'n/a' : t.pass ? 'pass' : 'FAIL'}</td></tr>`).join('')}</table>`);
  }
  if (rep.signLimit || rep.comparisons?.length) {
    parts.push('<h2>Peer comparison (node-oidc-provider) and RS256 signing limit</h2>');
    const peerRun = rep.runs.find((r) => r.target === 'oidc-provider');
    if (peerRun) parts.push(`<p class="note">Peer setting: ${esc(peerRun.setting)}</p>`);
    if (rep.signLimit) parts.push(`<p>RS256 signing limit of this machine: <b>${rep.signLimit.signsPerSec}</b> signatures/s (node:crypto, 2048-bit key, ${rep.signLimit.threads} worker threads, ${rep.signLimit.seconds} s; one thread alone ${rep.signLimit.singleThreadPerSec}/s; CPU per signature ${fmt(rep.signLimit.signCpuUs)} µs, per verification ${fmt(rep.signLimit.verifyCpuUs)} µs).</p>`);
    if (rep.ccVsSignLimit) {
      const c = rep.ccVsSignLimit;
      parts.push(`<p>client_credentials issuance: svc ${fmt(c.svcCapacity)} req/s = <b>${c.svcFraction !== undefined ? fmt(c.svcFraction * 100) + '%' : '–'}</b> of the signing limit (target ≥ 60%); peer (opaque, unsigned) ${fmt(c.peerCapacity)} req/s = ${c.peerFraction !== undefined ? fmt(c.peerFraction * 100) + '%' : '–'}.</p>`);
    }
    for (const c of rep.comparisons ?? []) {
      parts.push(`<h3>${esc(c.scenario)}: svc vs oidc-provider</h3><p>Capacity svc ${fmt(c.capacity.svc)} / peer ${fmt(c.capacity.peer)} req/s → ratio <b>${fmt(c.capacity.ratio, 2)}</b></p>`);
      parts.push(`<table><tr><th>offered req/s</th><th>svc achieved</th><th>peer achieved</th><th>ratio svc/peer</th><th>svc p95 ms</th><th>peer p95 ms</th></tr>${c.steps.map((s) => `<tr><td>${fmt(s.offered)}</td><td>${fmt(s.svc)}</td><td>${fmt(s.peer)}</td><td>${fmt(s.ratio, 2)}</td><td>${fmt(s.svcP95)}</td><td>${fmt(s.peerP95)}</td></tr>`).join('')}</table>`);
    }
  }
  const byScenario = new Map<string, ScenarioRun[]>();
  for (const r of rep.runs) { const a = byScenario.get(r.scenario) ?? []; a.push(r); byScenario.set(r.scenario, a); }
  for (const [name, runs] of byScenario) {
    parts.push(`<h2>${esc(name)}</h2><p class="note">${esc(runs[0]!.describe)}</p>`);
    const ok = runs.filter((r) => r.available && r.steps.length);
    if (ok.length) {
      const unit = ok[0]!.unit;
      const lat = (s: Step) => (unit === 'logins/s' ? s.flows?.p95 ?? NaN : s.latencyServed.p95);
      parts.push('<div class="charts">');
      parts.push(lineChart(`${name}: p95 latency vs offered load`, `offered ${unit}`, unit === 'logins/s' ? 'p95 per login, ms' : 'p95 latency, ms',
        ok.map((r) => ({ name: r.target, color: COLORS[r.target]!, points: r.steps.map((s) => [s.offered, lat(s)] as [number, number]) }))));
      parts.push(lineChart(`${name}: throughput vs offered load`, `offered ${unit}`, `achieved ${unit}`,
        ok.flatMap((r) => [
          { name: `${r.target} achieved`, color: COLORS[r.target]!, points: r.steps.map((s) => [s.offered, s.achieved] as [number, number]) },
          { name: `${r.target} correct answers`, color: COLORS[r.target]!, dashed: true, points: r.steps.map((s) => [s.offered, s.good] as [number, number]) },
        ]), { diagonal: true }));
      parts.push('</div>');
    }
    for (const r of runs) {
      parts.push(`<h3>${esc(r.target)}</h3><p class="note">Setting: ${esc(r.setting)}</p>`);
      if (!r.available) { parts.push(`<p class="bad">Not measured: ${esc(r.unavailable)}</p>`); continue; }
      if (r.notes.length) parts.push(`<p class="note">${r.notes.map(esc).join('<br>')}</p>`);
      parts.push(`<p class="note">Calibration (sequential probes before load): ${esc(Object.entries(r.calibration).map(([k, v]) => `${k}: ${v}`).join(' · '))}</p>`);
      parts.push(`<p>Capacity (highest rate of correct answers in an unsaturated step): <b>${fmt(r.capacity)} ${esc(r.unit)}</b> · within the p95 target of ${fmt(r.sloMs)} ms${r.unit === 'logins/s' ? ' per login' : ''}: <b>${fmt(r.capacityAtSlo)} ${esc(r.unit)}</b></p>`);
      if (r.cpu) parts.push(cpuTable(r));
      parts.push(stepRows(r, r.steps));
      if (r.overload) {
        const o = r.overload;
        parts.push(`<h4>Overload: ${fmt(o.offered)} ${esc(r.unit)} offered (2× capacity)</h4><p>Accepted (non-503) p95 <b>${fmt(o.latencyServed.p95)} ms</b> (p99 ${fmt(o.latencyServed.p99)}) · 2xx p95 ${fmt(o.latency2xx.p95)} ms · 503 sheds: ${o.shed} (${fmt(o.shedPct)}%), p95 ${fmt(o.latencyShed.p95)} ms · misclassified ${o.misclassifiedTotal} · errors/timeouts ${o.errors}/${o.timeouts}${o.notes['503 without Retry-After'] ? ` · <span class="bad">${o.notes['503 without Retry-After']} 503s without Retry-After</span>` : ''}</p>`);
        parts.push(stepRows(r, [o]));
      }
      if (r.burst) {
        const b = r.burst;
        parts.push(`<h4>Burst: ${fmt(b.step.offered)} ${esc(r.unit)} (5× capacity) for ${fmt(b.step.durationS)} s</h4><p>Shed ${b.step.shed} (${fmt(b.step.shedPct)}%), accepted p95 ${fmt(b.step.latencyServed.p95)} ms · a client_credentials request answered 200 within 100 ms again <b>${b.drainMs === undefined ? 'not within 10 s' : `${b.drainMs} ms`}</b> after the burst (target ≤ 2 s; ${b.probes.length} probes)</p>`);
        parts.push(stepRows(r, [b.step]));
      }
      if (r.soak) {
        const s = r.soak;
        parts.push(`<h4>Soak: ${s.seconds} s at ${fmt(s.rate)} ${esc(r.unit)} (70% of capacity)</h4><p>RSS ${s.flat ? '<b>flat</b>' : '<span class="bad">NOT flat</span>'} (within 10%) · errors ${s.errors} · misclassified ${s.misclassified}</p>`);
        parts.push(`<table><tr><th>process</th><th>first minute MB</th><th>last minute MB</th><th>min</th><th>max</th><th>growth %</th></tr>${s.rss.map((p) => `<tr><td>${esc(p.label)} (${p.pid})</td><td>${fmt(p.firstMb)}</td><td>${fmt(p.lastMb)}</td><td>${fmt(p.minMb)}</td><td>${fmt(p.maxMb)}</td><td>${fmt(p.growthPct)}</td></tr>`).join('')}</table>`);
        const pids = s.rss.map((p) => p.pid);
        const palette = ['#1f6feb', '#d97706', '#16a34a', '#9333ea', '#dc2626', '#0891b2'];
        parts.push('<div class="charts">');
        parts.push(lineChart('RSS per process during soak', 'seconds', 'RSS MB', pids.map((pid, i) => ({ name: s.rss[i]!.label, color: palette[i % palette.length]!, points: s.rssSeries.filter((x) => x.byPid[pid] !== undefined).map((x) => [x.t, x.byPid[pid]!] as [number, number]) }))));
        parts.push(lineChart('p95 latency per soak segment', 'segment start, s', 'p95 ms', [{ name: 'p95', color: '#1f6feb', points: s.segments.map((g, i) => [i * g.durationS, unitIsLogin(r) ? g.flows?.p95 ?? NaN : g.latencyServed.p95] as [number, number]) }]));
        parts.push('</div>');
        parts.push(stepRows(r, s.segments));
      }
    }
  }
  parts.push('</body></html>');
  return parts.join('\n');
}
/** Issue 22: CPU µs per correct answer per process kind, each paced step against the saturated one. */
function cpuTable(r: ScenarioRun): string {
  const c = r.cpu!;
  const head = `<tr><th>step</th><th>offered req/s</th><th>achieved</th><th>conns</th><th>p95 ms</th>${KINDS.map((k) => `<th>${esc(k)} µs</th>`).join('')}<th>total µs/req</th><th>× saturated</th></tr>`;
  const rows = r.steps.map((s) => {
    const f = c.flags.find((x) => x.offered === s.offered && s.kind === 'step');
    return `<tr><td>${s.kind}</td><td>${s.kind === 'saturated' ? 'closed loop' : fmt(s.offered)}</td><td>${fmt(s.achieved)}</td><td>${s.connections}</td><td>${fmt(s.latencyServed.p95)}</td>` +
      `${KINDS.map((k) => `<td>${fmt(s.cost?.us[k])}</td>`).join('')}<td><b>${fmt(s.cost?.totalUs)}</b></td><td${f?.flagged ? ' class="bad"' : ''}>${f ? `${fmt(f.ratio, 2)}${f.flagged ? ` &gt; ${c.limit} FLAGGED` : ''}` : ''}</td></tr>`;
  }).join('');
  const floor = c.floor ? `<p${c.floor.met ? '' : ' class="bad"'}>Against the floor (bare uWS, same run): ${fmt(c.floor.rate)} req/s ÷ saturated = <b>${fmt(c.floor.ratio, 2)}×</b>, the bare server's ${fmt(c.floor.bareRatio, 2)}×: <b>${fmt(c.floor.relative, 2)}×</b> the floor's ratio (limit ${c.floor.limit}×).</p>` : '';
  return `<p>CPU per correct answer by process kind (http = HTTP event loops, crypto = their signing threads, threads = their other threads: GC, libuv; load generator excluded). Saturated reference: <b>${fmt(c.saturatedUs)} µs</b>; a paced step above ${c.limit}× is flagged.</p><table>${head}${rows}</table>${floor}`;
}
const unitIsLogin = (r: ScenarioRun) => r.unit === 'logins/s';

/** Writes perf/results/<name>.json and .html plus latest.json/latest.html; returns the paths. */
export function writeReport(rep: Report, name: string): { json: string; html: string } {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const json = path.join(RESULTS_DIR, `${name}.json`);
  const html = path.join(RESULTS_DIR, `${name}.html`);
  const j = JSON.stringify(rep, null, 2);
  const h = renderHtml(rep);
  fs.writeFileSync(json, j);
  fs.writeFileSync(html, h);
  fs.writeFileSync(path.join(RESULTS_DIR, 'latest.json'), j);
  fs.writeFileSync(path.join(RESULTS_DIR, 'latest.html'), h);
  return { json: path.relative(ROOT, json), html: path.relative(ROOT, html) };
}
