// npm run perf -- <token-exchange|introspection|login|client-credentials|peer|all> [options]
// Starts svc itself (or targets --url), runs fixed-rate steps past saturation, writes JSON + HTML
// under perf/results/. See perf/README.md for every option.
import os from 'node:os';
import { SCENARIOS } from './scenarios/index.js';
import { compare, measure, meta, scenarioByName } from './lib/harness.js';
import { LoadGen } from './lib/loadgen.js';
import { startPeer } from './lib/peer.js';
import { writeReport, type Report, type ScenarioRun } from './lib/report.js';
import { CPU_SCENARIOS, runCpu } from './lib/cpurun.js';
import { runTracingAb } from './lib/tracing-ab.js';
import { measureSignLimit } from './lib/signlimit.js';
import { summaryLines, targetRows } from './lib/targets.js';
import { attachSvc, startSvc, type Target } from './lib/target.js';
import { num, parseArgs, say, stamp, str } from './lib/util.js';
import { runWebhooks, webhookTargets } from './lib/webhooks.js';
import { EDDSA_SCENARIOS, eddsaTargets, runEddsa } from './lib/eddsa.js';

const USAGE = `usage: npm run perf -- <scenario> [options]
scenarios: ${Object.keys(SCENARIOS).join(', ')}, peer, all, cpu, webhooks, eddsa, tracing-ab
  tracing-ab [--only introspection-hit] [--rounds 6] [--rate 1000] [--connections 32] [--ratio 0.01] [--order off-first|traced-first] [--aa]
      two svc instances (one HTTP process each), tracing off and sampling --ratio, take the same steps
      at the same time: CPU per answer of each, traced ÷ off per round and pooled (issue 34)
  eddsa  client_credentials and token exchange (cpu steps) signed with RS256, then by an svc signing
      with EdDSA (fresh database, TOKEN_SIGNING_ALG=EdDSA): capacity ratio and CPU per answer, same run
  webhooks [--wh-events N (20000)] [--wh-seconds S (10)] [--wh-rate R] [--wh-concurrency N] [--wh-keep-db]
      outbox → relay → queue → signed POST to a loopback receiver → attempt recorded, through one
      webhook-worker process: deliveries/s, event-to-receipt at half that rate, lost/duplicated
  cpu [--rates 500,1000,2000] [--sat-connections 64] [--no-floor] [--only ${Object.keys(CPU_SCENARIOS).join(',')}]
      CPU µs per request per process kind at fixed rates against a saturated closed loop, same run
  all  every scenario (login last), the cpu steps with closed loops of 64 and 256, then the peer:
       the full run of issue 19, ending with one PASS/FAIL line per target
  --url URL --bootstrap FILE [--pid N]  target a running svc (default: start one: WORKERS=2)
  --duration S (10)  --warmup S (3)  --rates a,b,c | --start R --factor F --max-steps N (9)  --past N (1)
  --connections N | --budget-ms MS (200) --max-connections N (1000)   --sat-p95 MS (1000)  --timeout S (10)
  --pacing even|burst (even: spaced arrivals; burst: stock autocannon per-second quota)
  --no-overload      skip the step at twice capacity
  --soak [--soak-seconds 300] [--soak-rate R]   soak at 70% of measured capacity
  --workers N (2)  --max-inflight N  --queue-workers   settings of the svc the harness starts
  --tokens N (300) --rs-clients N (2) --scope S    fixtures
  --sign-seconds S (5)  --no-svc (peer without svc)  --smtp-port P (login with --url; default 2525)`;

async function main(): Promise<number> {
  const { pos, opts } = parseArgs(process.argv.slice(2));
  const which = pos[0];
  if (!which || which === 'help' || opts.help) { console.log(USAGE); return which ? 0 : 2; }
  if (which === 'tracing-ab') { await runTracingAb(opts); return 0; }
  const cpuRun = which === 'cpu';
  const whOnly = which === 'webhooks';
  const eddsaOnly = which === 'eddsa';
  // Several scenarios in one run: `introspection-mix,peer` (the peer's introspection then sits beside svc's mix).
  // `all` is the full run of issue 19: every scenario, the CPU-per-request steps and closed loops of
  // `cpu`, and the peer. Login goes last: its e-mail backlog (the overload step queues thousands) would
  // be sent while the next scenario is measured.
  const full = which === 'all';
  const names = full ? [...Object.keys(SCENARIOS).filter((n) => n !== 'login'), 'login', 'peer'] : cpuRun || whOnly || eddsaOnly ? [] : which.split(',');
  for (const n of names) if (n !== 'peer') scenarioByName(n);
  const withPeer = names.includes('peer');
  const svcNames = names.filter((n) => n !== 'peer');
  const overload = opts.overload !== false;
  const soak = opts.soak === true;

  const lg = new LoadGen();
  const started: Target[] = [];
  let stopping = false;
  const cleanup = async () => {
    if (stopping) return;
    stopping = true;
    for (const t of started.reverse()) await t.stop().catch(() => {});
    await lg.close().catch(() => lg.kill());
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => { say(`${sig}: stopping`); void cleanup().then(() => process.exit(130)); });

  if (os.loadavg()[0]! > 1.5) say(`warning: the machine is busy (1-min load average ${os.loadavg()[0]!.toFixed(2)}); figures will be pessimistic and say so`);
  const rep: Report = { meta: meta(`npm run perf -- ${process.argv.slice(2).join(' ')}`, opts), runs: [] };
  const runs: ScenarioRun[] = rep.runs;
  try {
    // The signing limit is measured first, with nothing else busy on the machine.
    if (withPeer || cpuRun || full || names.includes('login')) rep.signLimit = await measureSignLimit(num(opts, 'sign-seconds', cpuRun ? 3 : 5));

    // Webhooks: a worker process and a database of their own, before svc starts (its own relay would idle beside them).
    if (whOnly || full) rep.webhooks = await runWebhooks(opts);

    let svc: Target | undefined;
    if (opts.svc !== false && !whOnly) {
      const needsSmtp = names.includes('login');
      const url = str(opts, 'url');
      if (url) {
        svc = attachSvc(url, str(opts, 'bootstrap'), opts.pid ? num(opts, 'pid', 0) : undefined);
        if (needsSmtp) say(`SMTP sink on 127.0.0.1:${await lg.startSmtp(num(opts, 'smtp-port', 2525))} (point the server's SMTP_URL here)`);
      } else {
        const smtpPort = needsSmtp ? await lg.startSmtp(0) : undefined;
        try {
          svc = await startSvc({
            workers: num(opts, 'workers', 2),
            // E-mail may go through the queue's e-mail worker: run the queue workers when login is measured.
            queueWorkers: opts['queue-workers'] === true || (opts['queue-workers'] !== false && needsSmtp),
            smtpPort, maxInflight: opts['max-inflight'] ? num(opts, 'max-inflight', 0) : undefined,
            // A Redis prefix of its own per login run: the e-mail queue lives in Redis, and jobs left
            // waiting by earlier runs (thousands under the default "svc:") would be mailed first, so
            // this run's codes would queue behind them. Keys under it expire or are tiny (queue meta).
            env: needsSmtp && !process.env.REDIS_PREFIX ? { REDIS_PREFIX: `perf-${stamp().replace(/[^0-9]/g, '')}:` } : undefined,
          });
          started.push(svc);
        } catch (e) {
          say(`svc could not be started: ${(e as Error).message}`);
          for (const n of [...svcNames, ...(withPeer ? ['client-credentials', 'introspection'] : [])]) {
            runs.push({ scenario: n, target: 'svc', unit: 'req/s', describe: SCENARIOS[n]!.describe, setting: 'svc started by the harness', available: false, unavailable: `svc did not start: ${(e as Error).message.split('\n')[0]}`, calibration: {}, notes: [], steps: [] });
          }
        }
      }
    }

    if (svc && (cpuRun || full)) runs.push(...(await runCpu(lg, svc, full && !opts['sat-connections'] ? { ...opts, 'sat-connections': '64,256' } : opts)));
    if (svc && eddsaOnly) runs.push(...(await runCpu(lg, svc, { ...opts, only: EDDSA_SCENARIOS.join(','), floor: false })));
    if (svc) for (const n of svcNames) runs.push(await measure(lg, svc, scenarioByName(n), opts, { overload, soak }));

    if (withPeer) {
      const peerNames = str(opts, 'peer-scenarios')?.split(',') ?? ['client-credentials', 'introspection'];
      // svc is stopped before the peer is measured when nothing more is needed of it: its queue workers
      // may still be sending the login run's e-mail, and that CPU would be taken from the peer.
      const svcRunOf = (n: string) => (n === 'introspection' && runs.some((r) => r.scenario === 'introspection-mix' && r.target === 'svc') ? 'introspection-mix' : n);
      if (svc && started.includes(svc) && peerNames.every((n) => runs.some((r) => r.scenario === svcRunOf(n) && r.target === 'svc'))) {
        await svc.stop();
        started.splice(started.indexOf(svc), 1);
        svc = undefined;
      }
      const peer = await startPeer();
      started.push(peer);
      for (const n of peerNames) {
        const s = scenarioByName(n);
        // svc's side of the introspection comparison is the seed's mix when it was measured in this run.
        const svcName = svcRunOf(n);
        let mine = runs.find((r) => r.scenario === svcName && r.target === 'svc');
        if (!mine && svc) { mine = await measure(lg, svc, s, opts, { overload: false, soak: false }); runs.push(mine); }
        // Step for step: the peer gets the same offered rates as svc (continuing the ladder if it goes further).
        const rates = mine?.available && mine.steps.length ? [...mine.steps.map((x) => x.offered)] : undefined;
        if (rates) { let r = rates.at(-1)!; for (let i = rates.length; i < num(opts, 'max-steps', 9); i++) rates.push(Math.round((r *= s.factor))); }
        runs.push(await measure(lg, peer, s, opts, { overload: false, soak: false, rates }));
      }
      rep.comparisons = peerNames.map((n) => compare(runs, n, n === 'introspection' && runs.some((r) => r.scenario === 'introspection-mix' && r.target === 'svc') ? 'introspection-mix' : n)).filter((c) => c !== undefined);
      const cc = rep.comparisons.find((c) => c.scenario === 'client-credentials');
      if (rep.signLimit) {
        const L = rep.signLimit.signsPerSec;
        rep.ccVsSignLimit = {
          signLimit: L, svcCapacity: cc?.capacity.svc, peerCapacity: cc?.capacity.peer,
          svcFraction: cc?.capacity.svc !== undefined ? Math.round((cc.capacity.svc / L) * 1000) / 1000 : undefined,
          peerFraction: cc?.capacity.peer !== undefined ? Math.round((cc.capacity.peer / L) * 1000) / 1000 : undefined,
        };
      }
      for (const c of rep.comparisons) say(`${c.scenario}: capacity svc ${c.capacity.svc ?? '–'} vs oidc-provider ${c.capacity.peer ?? '–'} req/s (ratio ${c.capacity.ratio ?? '–'})`);
      if (rep.ccVsSignLimit) say(`client_credentials vs RS256 signing limit ${rep.ccVsSignLimit.signLimit}/s: svc ${rep.ccVsSignLimit.svcFraction ?? '–'}, peer ${rep.ccVsSignLimit.peerFraction ?? '–'}`);
    }

    // Issue 35 item 1, last: everything else is stopped, then an svc signing with EdDSA runs the same cpu
    // steps of client_credentials and token exchange as the RS256 svc above.
    if (eddsaOnly || full) {
      for (const t of started.splice(0).reverse()) await t.stop().catch(() => {});
      runs.push(...(await runEddsa(lg, full && !opts['sat-connections'] ? { ...opts, 'sat-connections': '64,256' } : opts)));
    }
  } finally {
    await cleanup();
  }
  rep.targets = [...targetRows(runs, rep.signLimit, rep.comparisons), ...(rep.webhooks ? webhookTargets(rep.webhooks) : []), ...(eddsaOnly || full ? eddsaTargets(runs) : [])];
  rep.meta.loadavgEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const files = writeReport(rep, `${which}-${stamp()}`);
  console.log(`JSON report: ${files.json}`);
  console.log(`HTML report: ${files.html}  (also perf/results/latest.html)`);
  const mis = runs.reduce((a, r) => a + r.steps.reduce((b, s) => b + s.misclassifiedTotal, 0) + (r.overload?.misclassifiedTotal ?? 0), 0);
  const missing = runs.filter((r) => !r.available).map((r) => `${r.target} ${r.scenario}`);
  if (missing.length) console.log(`not measured: ${missing.join(', ')} (see the report for why)`);
  if (mis) console.log(`misclassified answers: ${mis}`);
  for (const line of summaryLines(rep.targets)) console.log(line);
  return 0;
}

main().then((code) => process.exit(code), (err) => { console.error(err instanceof Error ? err.stack : err); process.exit(1); });
