import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { waitFor } from '../helpers/processes.js';
import { PrivatePrometheus, promtool, repoRoot, type PromAlert } from '../helpers/prometheus.js';
import { startTestServer } from '../helpers/server.js';

// The alert rules in ops/prometheus/, checked by Prometheus's own tools (Debian's `prometheus` package,
// which ops/run.mjs installs for the suite) and evaluated by a real, private Prometheus scraping svc.

const rules = path.join(repoRoot, 'ops', 'prometheus', 'alerts.yml');
const unitTests = path.join(repoRoot, 'ops', 'prometheus', 'alerts.test.yml');
const rulesText = fs.readFileSync(rules, 'utf8');
const alertNames = [...rulesText.matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]!);

t.test('promtool check rules accepts the rule file', async (t) => {
  const r = promtool(['check', 'rules', rules]);
  t.equal(r.code, 0, r.out);
  t.match(r.out, /SUCCESS: \d+ rules found/);
});

t.test('promtool test rules: every alert unit test passes', async (t) => {
  const r = promtool(['test', 'rules', unitTests], path.dirname(unitTests));
  t.equal(r.code, 0, r.out);
  t.match(r.out, /SUCCESS/);
});

t.test('every alert has a firing and a quiet unit test case and a runbook section', async (t) => {
  t.ok(alertNames.length >= 10, `alerts found: ${alertNames.join(', ')}`);
  const tests = fs.readFileSync(unitTests, 'utf8');
  // Cases are written either as a block (alertname / eval_time / exp_alerts lines) or inline `{ ... }`.
  const cases = [...tests.matchAll(/alertname: (\w+)(?:,|\n)\s*eval_time: [\w]+(?:,|\n)\s*exp_alerts:\s*(\[\])?/g)];
  const ops = fs.readFileSync(path.join(repoRoot, 'docs', 'operations.md'), 'utf8');
  const runbooks = ops.slice(ops.indexOf('## Alerts and runbooks'));
  t.ok(ops.includes('## Alerts and runbooks'), 'docs/operations.md has the runbook section');
  for (const name of alertNames) {
    t.ok(cases.some((c) => c[1] === name && !c[2]), `${name} has a case where it fires`);
    t.ok(cases.some((c) => c[1] === name && c[2]), `${name} has a case where it stays quiet`);
    const block = rulesText.slice(rulesText.indexOf(`- alert: ${name}\n`)).split(/\n\s*- (?:alert|record):/)[0]!;
    t.match(block, `runbook: "docs/operations.md#${name.toLowerCase()}"`, `${name} links its runbook`);
    const section = new RegExp(`^### ${name}\\n([\\s\\S]*?)(?=^##|(?![\\s\\S]))`, 'm').exec(runbooks);
    t.ok(section, `docs/operations.md has a "### ${name}" section under "Alerts and runbooks"`);
    t.match(section?.[1] ?? '', /\*\*Means\*\*[\s\S]*\*\*Do\*\*/, `${name}'s runbook says what it means and what to do`);
  }
});

t.test('a real Prometheus scrapes svc and the availability burn-rate alert goes active on real 503s', async (t) => {
  // One request in flight at a time: concurrent /token requests beyond it are refused with 503
  // (svc_http_requests_total{route="/token",status="503"}), the failures the SLO counts.
  const srv = await startTestServer({ MAX_INFLIGHT: '1' });
  t.teardown(() => srv.close());
  const prom = new PrivatePrometheus();
  t.teardown(() => prom.destroy());
  await prom.start({ targets: [`127.0.0.1:${srv.port}`], ruleFiles: [rules] });

  // Prometheus has loaded the shipped rule groups and scrapes svc.
  const groups = await prom.api<{ groups: Array<{ name: string; rules: Array<{ name: string; health: string }> }> }>('rules');
  t.same(groups.groups.map((g) => g.name).sort(), ['svc-operations', 'svc-slo-alerts', 'svc-slo-recording']);
  await waitFor(async () => {
    const { activeTargets } = await prom.api<{ activeTargets: Array<{ health: string }> }>('targets');
    return activeTargets.length === 1 && activeTargets[0]!.health === 'up';
  }, 20_000, 200);
  t.pass('svc target is up');

  const burst = () => Promise.all(Array.from({ length: 20 }, () => fetch(`${srv.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=prometheus-probe&client_secret=wrong',
  }).then(async (r) => { await r.arrayBuffer(); return r.status; })));

  // Traffic continues until the alert is active: a counter's first sample has no rate, so one burst is not enough.
  let statuses: number[] = [];
  let active: PromAlert | undefined;
  await waitFor(async () => {
    statuses = statuses.concat(await burst());
    active = (await prom.alerts()).find((a) => a.labels.alertname === 'SvcAvailabilityBurnRateFast');
    return active !== undefined;
  }, 60_000, 200).catch((err: Error) => { throw new Error(`${err.message}; statuses ${JSON.stringify(statuses.slice(-40))}; prometheus: ${prom.output().slice(-2000)}`); });
  t.ok(statuses.includes(503), 'svc refused some /token requests with 503');
  t.ok(statuses.some((s) => s !== 503), 'and answered others');
  t.match(active, { labels: { severity: 'page', slo: 'availability' }, state: /^(pending|firing)$/ });

  // The recording rule it rests on holds the 5xx share that svc's own counters show.
  const ratio = await prom.api<{ result: Array<{ value: [number, string] }> }>('query?query=' + encodeURIComponent('svc:slo_availability_errors:ratio_rate5m'));
  t.ok(Number(ratio.result[0]?.value[1]) > 0.0144, `5xx share over 5 minutes ${ratio.result[0]?.value[1]} is past 14.4 times the budget`);

  // The latency recording rule reads the real histogram's le="0.25" bucket (a share, not an empty result).
  const slow = await prom.api<{ result: Array<{ value: [number, string] }> }>('query?query=' + encodeURIComponent('svc:slo_latency_errors:ratio_rate5m'));
  const share = Number(slow.result[0]?.value[1]);
  t.ok(slow.result.length === 1 && share >= 0 && share <= 1, `share of /token requests slower than 250 ms: ${slow.result[0]?.value[1]}`);

  // Every dashboard query is PromQL this Prometheus accepts (Grafana's $__rate_interval given a value).
  const grafana = path.join(repoRoot, 'ops', 'grafana');
  const boards = ['.', 'pending'].filter((d) => fs.existsSync(path.join(grafana, d))).flatMap((d) => fs.readdirSync(path.join(grafana, d)).filter((f) => f.endsWith('.json')).map((f) => path.join(d, f)));
  for (const file of boards) {
    const board = JSON.parse(fs.readFileSync(path.join(grafana, file), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    for (const p of board.panels) {
      for (const q of p.targets) {
        const expr = q.expr.replaceAll('$__rate_interval', '1m');
        const res = await fetch(`${prom.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
        t.equal(res.status, 200, `ops/grafana/${file}: "${p.title}" is valid PromQL: ${res.status === 200 ? '' : await res.text()}`);
      }
    }
  }

  // Alerts unrelated to load stay quiet on a healthy test server (latency and refusals depend on the
  // machine under the burst, so they are left out).
  const loadBound = /^(SvcAvailabilityBurnRate|SvcLatencyBurnRate|SvcAdmissionRefusals)/;
  const others = (await prom.alerts()).filter((a) => !loadBound.test(a.labels.alertname!));
  t.same(others.map((a) => a.labels.alertname), [], 'no other alert is active');
});
