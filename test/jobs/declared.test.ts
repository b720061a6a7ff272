import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { schemas } from '../../src/generated/index.js';
import { WORKER_ROLES } from '../../src/jobs/declare.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { JOBS, QUEUES, type JobName } from '../../src/jobs/table.js';
import { createLogger } from '../../src/log.js';
import { isCluster } from '../../src/store/redis.js';
import { testConfig, uniqueName } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';

// The jobs table (src/jobs/table.ts) is the one place background work is declared. This file fails when
// a job is produced but consumed nowhere, consumed but produced nowhere (no producer call and no
// schedule), or when a queue is produced, consumed or scheduled around the table.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'generated' ? [] : files(path.join(dir, e.name))) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
}
const sources = [...files(path.join(root, 'src')), ...files(path.join(root, 'workers'))]
  .map((f) => ({ file: path.relative(root, f), text: fs.readFileSync(f, 'utf8') }));
const jobNames = Object.keys(JOBS) as JobName[];

t.test('every queue is consumed by a role the supervisor starts, and every role starts its consumers', async (t) => {
  for (const [q, d] of Object.entries(QUEUES)) {
    t.ok((WORKER_ROLES as readonly string[]).includes(d.role), `queue ${q} is consumed by ${d.role}, a role the supervisor forks`);
    t.ok(jobNames.some((k) => JOBS[k].queue === q), `queue ${q} carries at least one declared job`);
    const starter = sources.filter((s) => s.file.startsWith('workers/') && new RegExp(`startConsumers(<[^>]*>)?\\(\\s*'${d.role}'`).test(s.text));
    t.equal(starter.length, 1, `one worker process starts the consumers of ${d.role} (for queue ${q})`);
  }
});

t.test('every job has a run function, a schema under schemas/jobs/, and is produced or scheduled', async (t) => {
  const produced = new Set<string>();
  for (const s of sources) {
    if (s.file.startsWith('src/jobs/')) continue;
    // Producers are the process's JobQueues, always named `jobs` (deps.jobs, this.jobs).
    for (const m of s.text.matchAll(/\bjobs\.(?:add|addBulk)\(\s*'([a-z0-9-]+)'/g)) produced.add(m[1]!);
  }
  for (const k of jobNames) {
    const d = JOBS[k];
    t.equal(typeof (await d.run()), 'function', `${k}: run loads a function`);
    t.ok(schemas[d.schema], `${k}: its data schema ${d.schema} exists`);
    t.ok(produced.has(k) || ('schedule' in d && d.schedule), `${k}: produced somewhere (a jobs.add('${k}', ...) call) or scheduled`);
  }
  t.ok(produced.size >= 5, `found producers of ${[...produced].join(', ')}`);
  for (const p of produced) t.ok(p in JOBS, `${p}: what is produced is declared`);
  const names = new Map<string, string>();
  for (const k of jobNames) {
    const id = `${JOBS[k].queue}/${JOBS[k].name}`;
    t.notOk(names.has(id), `${k}: no other job shares queue ${JOBS[k].queue} and name ${JOBS[k].name}${names.has(id) ? ` (${names.get(id)})` : ''}`);
    names.set(id, k);
  }
  const unused = Object.keys(schemas).filter((id) => id.startsWith('jobs.') && !jobNames.some((k) => JOBS[k].schema === id));
  t.same(unused, [], 'every schema under schemas/jobs/ is some job\'s data');
});

t.test('nothing produces, consumes or schedules BullMQ jobs around the table', async (t) => {
  const around = sources.filter((s) => !s.file.startsWith('src/jobs/') && /new (Queue|Worker|FlowProducer)\b|upsertJobScheduler|from 'bullmq'[^;]*\b(Queue|Worker)\b[,}]/.test(s.text
    .replace(/import type [^;]+;/g, '')))
    .map((s) => s.file);
  t.same(around, [], 'files that open BullMQ queues or workers themselves');
  const consuming = sources.filter((s) => /\bstartConsumers\(/.test(s.text) && !s.file.startsWith('src/jobs/')).map((s) => s.file);
  t.ok(consuming.length >= 4, `consumers are started in ${consuming.join(', ')}`);
  t.same(consuming.filter((f) => !f.startsWith('workers/')), [], 'only worker processes start consumers (never an HTTP process)');
});

t.test('data a job\'s schema refuses is refused when it is added, before anything reaches Redis', async (t) => {
  const jobs = new JobQueues(testConfig());
  t.teardown(() => jobs.close());
  await t.rejects(jobs.add('user-job', { tenantId: 't', jobId: 'j', kind: 'delete' } as never), { name: 'TypeError', message: /job user-job: data refused by jobs.user-job \(\/kind/ });
  await t.rejects(jobs.add('webhook-delivery', { tenantId: 't', deliveryId: 'd' } as never), { name: 'TypeError', message: /jobs.webhook-delivery/ });
});

t.test('a job added while the cluster connection is still checking the cluster is queued, and the queue keeps working', async (t) => {
  const config = testConfig();
  const jobs = new JobQueues(config);
  t.teardown(() => jobs.close());
  const conn = jobs.connection;
  if (!isCluster(conn)) {
    t.pass('one Redis: BullMQ waits for its ready event itself (the suite runs on a cluster unless TEST_REDIS=single)');
    return;
  }
  // CI once caught a Queue made in this window: BullMQ took the cluster's 'connect' for ready, its first
  // command failed without an offline queue, and every later add on that queue failed with it.
  await new Promise<void>((resolve) => conn.once('connect', () => resolve()));
  t.equal(conn.status, 'connect', 'the cluster is connected but not yet ready');
  const job = await jobs.add('tenant-purge', { tenantId: uniqueName('never') }, { delay: 3_600_000 });
  const queue = await jobs.queue(JOBS['tenant-purge'].queue);
  t.equal(await queue.getJobState(job.id!), 'delayed', 'the job is in the queue');
  await queue.remove(job.id!);
});

t.test('a job whose data its schema refuses fails for good when consumed, without being run', async (t) => {
  // Nothing listens on this SMTP port: a job that got as far as sending would fail and be retried instead.
  const config = testConfig({ SMTP_URL: 'smtp://127.0.0.1:9' });
  const jobs = new JobQueues(config);
  const { startEmailWorker } = await import('../../workers/email-worker.js');
  const worker = await startEmailWorker(config, createLogger('silent'));
  t.teardown(async () => { await worker.close(); await jobs.close(); });
  // Added around the producer's check, as an old or foreign producer could.
  const job = await (await jobs.queue('email')).add('login_code', { template: 'login_code', tenantId: 't', to: 'a@example.com' }, { attempts: 5 });
  let failed: { reason: string; attempts: number; state: string } | undefined;
  await waitFor(async () => {
    if ((await (await jobs.queue('email')).getJobState(job.id!)) !== 'failed') return false;
    const j = (await (await jobs.queue('email')).getJob(job.id!))!;
    failed = { reason: j.failedReason, attempts: j.attemptsMade, state: 'failed' };
    return true;
  }, 10_000);
  t.same(failed, { reason: 'job data refused by jobs.email', attempts: 1, state: 'failed' }, 'failed at its first attempt, not retried');
});
