import { loadConfig, type Config } from '../src/config.js';
import type { WorkerRole } from '../src/jobs/declare.js';
import { createLogger, type Logger } from '../src/log.js';
import { startTracing } from '../src/tracing/start.js';

/** How each role's process starts: its consumers (from src/jobs/table.ts) and whatever else it runs (the webhook relay). */
const STARTERS: Record<WorkerRole, (config: Config, log: Logger) => Promise<{ close(): Promise<void> }>> = {
  'webhook-worker': async (c, l) => (await import('./webhook-worker.js')).startWebhookWorker(c, l),
  'email-worker': async (c, l) => (await import('./email-worker.js')).startEmailWorker(c, l),
  'jobs-worker': async (c, l) => (await import('./jobs-worker.js')).startJobsWorker(c, l),
  'log-worker': async (c, l) => (await import('./log-worker.js')).startLogWorker(c, l),
};

/** A queue worker process of one role, started and restarted by the supervisor. */
export async function runQueueWorker(role: WorkerRole, config: Config, log: Logger): Promise<void> {
  log.debug({ role, queueRedis: config.queueRedisUrl.replace(/\/\/[^@]*@/, '//***@') }, 'queue worker started');
  // Traced like the HTTP processes when an OTLP endpoint is set; jobs continue their producer's trace (src/jobs/).
  const tracing = config.tracing ? startTracing(config.tracing, role) : null;
  const running = await STARTERS[role](config, log);
  process.send?.({ type: 'svc:ready' });
  // Keep the process alive until told to stop.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(keepAlive);
    await running.close().catch(() => {});
    await tracing?.close();
    process.exit(0);
  };
  process.on('message', (m: { type?: string }) => { if (m?.type === 'svc:shutdown') void stop(); });
  process.on('SIGTERM', () => void stop());
  // The supervisor is gone: end rather than run unmanaged beside the workers a restarted supervisor forks.
  if (process.connected) process.on('disconnect', () => void stop());
  process.on('SIGINT', () => void stop());
}

/**
 * `node dist/workers/<role>.js`: one role's process without a supervisor (the crash tests fork these;
 * also for running a role apart). Configuration comes from the environment as usual. Called without a
 * top-level await: the jobs table loads the role's run functions from that same file by import(), which
 * would otherwise wait for the file's own evaluation to end.
 */
export async function runAlone(role: WorkerRole): Promise<void> {
  const config = loadConfig();
  await runQueueWorker(role, config, createLogger(config.logLevel, { role }));
}
