// Issue 22: the per-wake-up floor of this machine, apart from svc. A bare uWebSockets.js server
// (perf/bare-server.ts) in a child process; autocannon (evenly paced as in
// the harness) at fixed rates, then a closed loop; CPU µs per request of the server from /proc.
//   node dist/perf/wakeup-bench.js [--rates 500,1000,2000] [--duration 8] [--connections 64]
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { CpuCost } from './lib/cpucost.js';
import { setPacing } from './lib/pacing.js';
import { num, parseArgs, str } from './lib/util.js';

const require = createRequire(import.meta.url);

const { opts } = parseArgs(process.argv.slice(2));
const rates = (str(opts, 'rates') ?? '500,1000,2000').split(',').map(Number);
const durationS = num(opts, 'duration', 8);
const child = fork(fileURLToPath(new URL('./bare-server.js', import.meta.url)), ['0']);
const port: number = await new Promise((r) => child.once('message', (m: any) => r(m.port)));
const autocannon = require('autocannon');
setPacing(true);
const step = async (rate: number | undefined, connections: number) => {
  const cost = new CpuCost(() => [child.pid!], () => []).start();
  const res: any = await new Promise((resolve, reject) => autocannon({ url: `http://127.0.0.1:${port}/introspect`, method: 'POST', body: 'token=x', connections, duration: durationS, overallRate: rate }, (e: Error, r: unknown) => (e ? reject(e) : resolve(r))));
  const used = cost.stop();
  const cpu = Object.values(used.cpu).reduce((a, b) => a + b, 0);
  const n = res.requests.total;
  return { rate: rate ?? 'closed loop', connections, achieved: Math.round(n / used.secs), us: Math.round((cpu / n) * 1e7) / 10 };
};
const out = [];
for (const r of rates) out.push(await step(r, Math.max(8, Math.ceil(r * 0.2))));
out.push(await step(undefined, num(opts, 'connections', 64)));
const sat = out.at(-1)!.us;
for (const o of out) console.log(`${String(o.rate).padStart(11)} ${String(o.connections).padStart(4)} conns: ${o.achieved} req/s, server CPU ${o.us} µs/req (${Math.round((o.us / sat) * 100) / 100}× closed loop)`);
child.kill();
process.exit(0);
