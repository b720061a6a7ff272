// Issue 35 item 3: what queueing a login code's e-mail costs (MailQueue.sendLoginCode: schema check,
// seal, BullMQ's addStandardJob script), against the lightest durable alternative, one LPUSH of the same
// payload on a list (what a hand-made queue would send at best, before its own crash recovery). CPU of
// this process (as the HTTP process would spend it) and of the Redis server, per message, with 32 adds
// in flight as concurrent requests would have them. Starts a private redis-server (nothing else on it).
// node dist/perf/email-enqueue-bench.js [--messages 4000] [--rounds 3]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.js';
import { JobQueues } from '../src/jobs/queues.js';
import { MailQueue } from '../src/mail/queue.js';
import { seal, mailKey } from '../src/mail/seal.js';
import { createRedis, closeRedis } from '../src/store/redis.js';

const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] ?? dflt : dflt; };
const messages = Number(arg('messages', '4000'));
const rounds = Number(arg('rounds', '3'));
const INFLIGHT = 32;

const port = await new Promise<number>((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); }); });
const dir = fs.mkdtempSync('/tmp/email-bench-');
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
for (let i = 0; i < 100 && spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() !== 'PONG'; i++) await sleep(50);

const redisTicks = (): number => {
  const rest = fs.readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(rest[11]) + Number(rest[12]);
};
const tck = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

const config = loadConfig({ ...process.env, NODE_ENV: 'development', REDIS_URL: `redis://127.0.0.1:${port}`, QUEUE_REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: 'bench:', KEY_ENCRYPTION_KEY: '11'.repeat(32) });
const jobs = new JobQueues(config);
const mail = new MailQueue(jobs, config.keyEncryptionKey);
const plain = createRedis(config, 'producer');
const key = mailKey(config.keyEncryptionKey);

type Send = (i: number) => Promise<unknown>;
const bull: Send = (i) => mail.sendLoginCode('bench-tenant', `user-${i}@bench.test`, '123456', 'Bench client', 300);
const lpush: Send = (i) => plain.lpush('bench:mail', JSON.stringify({ template: 'login_code', tenantId: 'bench-tenant', to: `user-${i}@bench.test`, sealed: seal(key, '123456', `user-${i}@bench.test`), clientName: 'Bench client', expiresInSeconds: 300 }));

async function measure(send: Send): Promise<{ appUs: number; redisUs: number; wallMs: number }> {
  const c0 = process.cpuUsage(); const r0 = redisTicks(); const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: INFLIGHT }, async () => { while (next < messages) await send(next++); }));
  const c = process.cpuUsage(c0); const r = redisTicks() - r0;
  return { appUs: (c.user + c.system) / messages, redisUs: (r / tck) * 1e6 / messages, wallMs: performance.now() - t0 };
}

await measure(bull); await measure(lpush); // warm both paths (JIT, script load, connections)
for (let round = 1; round <= rounds; round++) {
  for (const [name, send] of [['BullMQ job (sendLoginCode)', bull], ['LPUSH of the same payload', lpush]] as const) {
    const m = await measure(send);
    console.log(`round ${round} ${name}: ${m.appUs.toFixed(1)} µs CPU per message in the producer, ${m.redisUs.toFixed(1)} µs in Redis, ${(messages / (m.wallMs / 1000)).toFixed(0)} messages/s`);
  }
}
await jobs.close();
await closeRedis(plain);
server.kill('SIGKILL');
fs.rmSync(dir, { recursive: true, force: true });
