import type { Deps } from '../deps.js';
import type { SchemaTypes } from '../generated/types.js';
import { clusterMetrics } from '../health.js';
import type { Route } from '../http/types.js';
import { adminRoute } from './route.js';

type Dashboard = SchemaTypes['admin.dashboard'];
type Group = Dashboard['groups'][number];
const GROUPS: Array<Group['name']> = ['token', 'introspect', 'login', 'admin', 'other'];

/** Which dashboard line a route template counts in. */
export function groupOf(route: string): Group['name'] {
  if (route === '/token') return 'token';
  if (route === '/introspect') return 'introspect';
  if (route.startsWith('/api/admin')) return 'admin';
  if (/^\/(authorize|email-code|login|logout|passkeys?|device|consent)(\/|$)/.test(route)) return 'login';
  return 'other';
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The request counters of the Prometheus text (docs/operations.md "Metrics") summed by group. Reads only
 * what a scrape already makes: nothing is counted for the dashboard on the request paths.
 */
export function summarize(text: string, at: number): Dashboard {
  const groups = new Map(GROUPS.map((name) => [name, { name, requests: 0, client_errors: 0, server_errors: 0, buckets: new Map<number, number>(), count: 0, sum: 0 }]));
  let inflight = 0;
  let refusals = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('svc_')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const [, name, rawLabels = '', rawValue] = m;
    const value = Number(rawValue);
    if (!Number.isFinite(value)) continue;
    const labels: Record<string, string> = {};
    for (const l of rawLabels.matchAll(LABEL)) labels[l[1]!] = l[2]!;
    const g = labels.route !== undefined ? groups.get(groupOf(labels.route))! : undefined;
    if (name === 'svc_http_requests_total' && g) {
      g.requests += value;
      if (labels.status?.startsWith('4')) g.client_errors += value;
      if (labels.status?.startsWith('5')) g.server_errors += value;
    } else if (name === 'svc_http_request_duration_seconds_bucket' && g && labels.le !== '+Inf') {
      const le = Number(labels.le);
      g.buckets.set(le, (g.buckets.get(le) ?? 0) + value);
    } else if (name === 'svc_http_request_duration_seconds_count' && g) g.count += value;
    else if (name === 'svc_http_request_duration_seconds_sum' && g) g.sum += value;
    else if (name === 'svc_http_inflight_requests') inflight += value;
    else if (name === 'svc_admission_refusals_total') refusals += value;
  }
  return {
    at,
    groups: [...groups.values()].map(({ buckets, count, sum, ...rest }) => {
      const le = [...buckets.keys()].sort((a, b) => a - b);
      return { ...rest, latency: { le, counts: le.map((b) => buckets.get(b)!), count, sum } };
    }),
    inflight,
    refusals,
  };
}

/** The console's start screen reads request rates, errors and latency here (issue 33): platform administrators only, as /metrics covers every tenant. */
export function dashboardRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/dashboard', permission: 'admin:metrics:read', tags: ['operations'], platformOnly: true,
      summary: 'Request, error and latency totals by route group from the deployment\'s metrics (the same as GET /metrics), for the console\'s charts',
      response: { 200: 'admin.dashboard' },
      handler: async () => ({ body: summarize(await clusterMetrics(), Date.now()) }),
    }),
  ];
}
