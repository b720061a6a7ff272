import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/prometheus.js';
import { metricNames, recordedNames, registeredMetricNames } from '../helpers/promql.js';

// The Grafana dashboards in ops/grafana/: valid dashboard JSON, and every panel's query reads only metrics
// svc registers (or recording rules of ops/prometheus/alerts.yml). Panels waiting for a metric svc does not
// register yet live in ops/grafana/pending/ and are reported as todo, naming the metric.

interface Target { expr?: string; refId?: string; datasource?: { uid?: string } }
interface Panel { id?: number; type?: string; title?: string; targets?: Target[]; panels?: Panel[]; gridPos?: Record<string, number>; datasource?: { uid?: string } }
interface Dashboard { uid?: string; title?: string; schemaVersion?: number; panels?: Panel[]; templating?: { list?: Array<{ name?: string; type?: string }> } }

const dir = path.join(repoRoot, 'ops', 'grafana');
const load = (d: string) => fs.readdirSync(d).filter((f) => f.endsWith('.json')).sort().map((f) => ({ file: path.relative(repoRoot, path.join(d, f)), board: JSON.parse(fs.readFileSync(path.join(d, f), 'utf8')) as Dashboard }));
const allPanels = (ps: Panel[] = []): Panel[] => ps.flatMap((p) => (p.type === 'row' ? allPanels(p.panels) : [p]));

t.test('dashboards are Grafana dashboard JSON over a chosen Prometheus data source', async (t) => {
  const boards = load(dir);
  t.same(boards.map((b) => b.board.uid).sort(), ['svc-login', 'svc-overview', 'svc-storage', 'svc-tokens', 'svc-webhooks-queues'], 'overview, tokens, login, webhooks and queues, Redis/Postgres');
  for (const { file, board } of [...boards, ...(fs.existsSync(path.join(dir, 'pending')) ? load(path.join(dir, 'pending')) : [])]) {
    t.ok(board.title && typeof board.schemaVersion === 'number', `${file}: title and schemaVersion`);
    t.ok(board.templating?.list?.some((v) => v.name === 'datasource' && v.type === 'datasource'), `${file}: a datasource variable, so it loads into any Grafana`);
    const panels = allPanels(board.panels);
    t.same(new Set(panels.map((p) => p.id)).size, panels.length, `${file}: panel ids are unique`);
    for (const p of panels) {
      t.ok(p.title && p.gridPos && p.targets?.length, `${file}: panel "${p.title}" has a title, a position and queries`);
      for (const q of p.targets ?? []) {
        t.ok(q.expr && q.refId && q.datasource?.uid === '${datasource}', `${file}: "${p.title}" ${q.refId} queries the chosen data source`);
      }
    }
  }
});

t.test('every panel query names only metrics svc registers', async (t) => {
  const known = new Set([...(await registeredMetricNames()), ...recordedNames()]);
  t.ok(known.has('svc_http_requests_total') && known.has('svc_http_request_duration_seconds_bucket'), 'the registry was read');
  for (const { file, board } of load(dir)) {
    for (const p of allPanels(board.panels)) {
      for (const q of p.targets ?? []) {
        const names = metricNames(q.expr ?? '');
        t.ok(names.length > 0, `${file}: "${p.title}" ${q.refId} reads a metric`);
        t.same(names.filter((n) => !known.has(n)), [], `${file}: "${p.title}" ${q.refId} reads ${names.join(', ')}`);
      }
    }
  }
  const pendingDir = path.join(dir, 'pending');
  for (const { file, board } of fs.existsSync(pendingDir) ? load(pendingDir) : []) {
    for (const p of allPanels(board.panels)) {
      const missing = [...new Set((p.targets ?? []).flatMap((q) => metricNames(q.expr ?? '')).filter((n) => !known.has(n)))];
      if (missing.length) t.fail(`${file}: "${p.title}"`, { todo: `svc does not register ${missing.join(', ')} yet` });
      else t.pass(`${file}: "${p.title}" has all its metrics now: move it into ${path.basename(file)}`);
    }
  }
});

t.test('the metric-name extraction reads PromQL as intended', async (t) => {
  t.same(metricNames('histogram_quantile(0.99, sum by (route, le) (rate(svc_http_request_duration_seconds_bucket{route=~"/token|/x"}[$__rate_interval])))'), ['svc_http_request_duration_seconds_bucket']);
  t.same(metricNames('time() - max(svc_signing_key_created_timestamp_seconds) > 90 * 86400').sort(), ['svc_signing_key_created_timestamp_seconds']);
  t.same(metricNames('sum(rate(a_total[5m])) / sum(rate(b_total[5m])) > 1e-3 and on () c:rec == 1').sort(), ['a_total', 'b_total', 'c:rec']);
});
