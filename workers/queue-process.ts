import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';

/**
 * A queue worker process (webhook or email delivery), started and restarted by the supervisor.
 * The webhook consumer (with the outbox relay) and the email consumer start here by role.
 */
export async function runQueueWorker(role: string, config: Config, log: Logger): Promise<void> {
  const closers: Array<() => Promise<void>> = [];
  log.debug({ role, queueRedis: config.queueRedisUrl.replace(/\/\/[^@]*@/, '//***@') }, 'queue worker started');
  if (role === 'webhook-worker') { const w = await (await import('./webhook-worker.js')).startWebhookWorker(config, log); closers.push(() => w.close()); }
  if (role === 'jobs-worker') { const w = await (await import('./jobs-worker.js')).startJobsWorker(config, log); closers.push(() => w.close()); }
  if (role === 'log-worker') { const w = await (await import('./log-worker.js')).startLogWorker(config, log); closers.push(() => w.close()); }
  if (role === 'email-worker') { const w = await (await import('./email-worker.js')).startEmailWorker(config, log); closers.push(() => w.close()); }
  process.send?.({ type: 'svc:ready' });
  // Keep the process alive until told to stop.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(keepAlive);
    await Promise.allSettled(closers.map((c) => c()));
    process.exit(0);
  };
  process.on('message', (m: { type?: string }) => { if (m?.type === 'svc:shutdown') void stop(); });
  process.on('SIGTERM', () => void stop());
  // The supervisor is gone: end rather than run unmanaged beside the workers a restarted supervisor forks.
  if (process.connected) process.on('disconnect', () => void stop());
  process.on('SIGINT', () => void stop());
}
