// npm run profile -- <scenario> [doctor|flame|bubbleprof] [ladder options]
// Runs one HTTP process of svc (SVC_ROLE=http, no supervisor, WORKERS=1) under `clinic <tool>`,
// drives the scenario against it, stops it like a Ctrl-C and prints where clinic wrote its report.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { measure, meta, scenarioByName } from './lib/harness.js';
import { LoadGen } from './lib/loadgen.js';
import { writeReport, type Report } from './lib/report.js';
import { startSvc, type StartedSvc } from './lib/target.js';
import { RESULTS_DIR, ROOT, parseArgs, say, stamp } from './lib/util.js';

const TOOLS = ['doctor', 'flame', 'bubbleprof'];

async function main(): Promise<number> {
  const { pos, opts } = parseArgs(process.argv.slice(2));
  const name = pos[0];
  const tool = pos[1] ?? 'doctor';
  if (!name || !TOOLS.includes(tool)) {
    console.log(`usage: npm run profile -- <token-exchange|introspection|login|client-credentials> [${TOOLS.join('|')}] [--duration S] [--rates a,b] [--max-steps N]`);
    return 2;
  }
  const s = scenarioByName(name);
  // Shorter defaults than perf: profiles get large (bubbleprof especially).
  if (opts['max-steps'] === undefined) opts['max-steps'] = tool === 'bubbleprof' ? '2' : '4';
  if (opts.duration === undefined) opts.duration = tool === 'bubbleprof' ? '5' : '10';
  if (opts.warmup === undefined) opts.warmup = '2';
  const dest = path.join(RESULTS_DIR, 'clinic');
  fs.mkdirSync(dest, { recursive: true });
  const lg = new LoadGen();
  let svc: StartedSvc | undefined;
  const rep: Report = { meta: meta(`npm run profile -- ${process.argv.slice(2).join(' ')}`, opts), runs: [] };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => { void (svc?.stop() ?? Promise.resolve()).finally(() => { lg.kill(); process.exit(130); }); });
  try {
    const smtpPort = s.smtp ? await lg.startSmtp(0) : undefined;
    svc = await startSvc({ workers: 1, queueWorkers: false, smtpPort, clinic: { tool, dest } });
    rep.runs.push(await measure(lg, svc, s, opts, { overload: opts.overload === true, soak: false }));
  } finally {
    say(`stopping the profiled process; clinic ${tool} is analysing (this can take a minute)`);
    await svc?.stop();
    await lg.close().catch(() => lg.kill());
  }
  rep.meta.loadavgEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const files = writeReport(rep, `profile-${name}-${tool}-${stamp()}`);
  const text = svc?.clinicOut?.() ?? '';
  const html = /(\S+\.clinic-[a-z]+\.html)/.exec(text)?.[1] ?? /file:\/\/(\S+\.html)/.exec(text)?.[1];
  console.log(`load figures: ${files.html}`);
  if (html) console.log(`clinic ${tool} report: ${path.relative(ROOT, html.replace(/^file:\/\//, ''))}`);
  else console.log(`clinic ${tool} output (no HTML path found; see ${svc ? path.relative(ROOT, svc.logFile) : 'the log'}):\n${text.slice(-2000)}`);
  return html ? 0 : 1;
}

main().then((code) => process.exit(code), (err) => { console.error(err instanceof Error ? err.stack : err); process.exit(1); });
