import fs from 'node:fs';
import path from 'node:path';
import client from 'prom-client';
import { repoRoot } from './prometheus.js';

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: identifiers left once strings, label matchers, range and
 * grouping clauses are removed, that are not function calls, keywords or numbers. Enough for the queries
 * in ops/ (not a PromQL parser).
 */
export function metricNames(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const out = new Set<string>();
  for (const m of e.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const rest = e.slice(m.index! + m[0].length).trimStart();
    if (rest.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    // The letters of a number in exponent form or a duration (1e3, 5m) are not preceded by a name character.
    if (m.index! > 0 && /[0-9.]/.test(e[m.index! - 1]!)) continue;
    out.add(m[0]);
  }
  return [...out];
}

/**
 * The names of every metric svc registers: the modules under dist/src that create prom-client metrics
 * are imported (so a new module's metrics count without editing this list), then prom-client's registry
 * is read, with the metric objects those modules export; histograms add their _bucket, _sum and _count
 * series, summaries _sum and _count.
 */
export async function registeredMetricNames(): Promise<Set<string>> {
  const src = path.join(repoRoot, 'dist', 'src');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        const text = fs.readFileSync(p, 'utf8');
        if (/prom-client/.test(text) && /new (?:\w+\.)?(?:Counter|Gauge|Histogram|Summary)\s*\(|collectDefaultMetrics\s*\(/.test(text)) files.push(p);
      }
    }
  };
  walk(src);
  const names = new Set<string>();
  const add = (name: string, type: string) => {
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  };
  for (const f of files) {
    const mod = (await import(f)) as Record<string, unknown>;
    // Metrics a process registers only when it has their source (`registers: []`, then registerMetric:
    // the outbox and revocation gauges) are exported objects rather than registry entries here.
    for (const v of Object.values(mod)) {
      if (v instanceof client.Histogram) add((v as unknown as { name: string }).name, 'histogram');
      else if (v instanceof client.Summary) add((v as unknown as { name: string }).name, 'summary');
      else if (v instanceof client.Counter || v instanceof client.Gauge) add((v as unknown as { name: string }).name, 'other');
    }
  }
  for (const m of await client.register.getMetricsAsJSON()) add(m.name, String(m.type));
  return names;
}

/** The recording rules' names in ops/prometheus/alerts.yml (dashboards may read them). */
export function recordedNames(): string[] {
  const text = fs.readFileSync(path.join(repoRoot, 'ops', 'prometheus', 'alerts.yml'), 'utf8');
  return [...text.matchAll(/^\s*- record: (\S+)$/gm)].map((m) => m[1]!);
}
