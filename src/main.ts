import cluster from 'node:cluster';
import 'prom-client'; // every cluster process answers the primary's metrics requests
import { loadConfig, ConfigError, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { EXIT_CONFIG, runSupervisor, type Role } from './supervisor/index.js';

/** One entry: becomes the supervisor, an HTTP process or a queue worker according to SVC_ROLE. */
export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); process.exit(2); }
    throw err;
  }
  const role = (process.env.SVC_ROLE ?? (cluster.isPrimary ? 'supervisor' : 'http')) as Role | 'supervisor';
  const log = createLogger(config.logLevel, { role });
  if (role === 'supervisor') { runSupervisor(config, log); return; }
  if (role === 'http') { await runHttpProcess(config, log); return; }
  const { runQueueWorker } = await import('../workers/queue-process.js');
  await runQueueWorker(role, config, log);
}

/** How long a stopped HTTP process may take to end by itself before it is made to (and reports what held it). */
const LEAK_GRACE_MS = 2000;

async function runHttpProcess(config: Config, log: Logger): Promise<void> {
  const { startHttp } = await import('./http-process.js');
  const { SigningKeyUndecryptable } = await import('./tokens/keys.js');
  let running: Awaited<ReturnType<typeof startHttp>>;
  try {
    running = await startHttp(config, log);
  } catch (err) {
    // No restart can mend a key this process cannot decrypt: say so once and let the supervisor stop.
    if (err instanceof SigningKeyUndecryptable) await exitOnConfigError(`${err.message} (start with that key; keys sealed under a wrong one by mistake are replaced by running svc keys rotate twice with the right one)`);
    throw err;
  }
  process.send?.({ type: 'svc:ready' });
  log.debug({ port: running.port }, 'http process listening');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const drained = await running.close();
    log.info({ drained }, 'http process stopped');
    // The lifecycle closed every connection, queue and timer, so the process now ends by itself once the
    // supervisor's channel is let go. Something still open is a leak: name it, then exit anyway.
    process.exitCode = 0;
    if (process.connected) process.disconnect();
    setTimeout(() => {
      log.warn({ handles: process.getActiveResourcesInfo() }, 'handles left open after shutdown; exiting anyway');
      process.exit(0);
    }, LEAK_GRACE_MS).unref();
  };
  process.on('message', (m: { type?: string }) => { if (m?.type === 'svc:shutdown') void stop(); });
  process.on('SIGTERM', () => void stop());
  // The supervisor is gone (killed, crashed): drain and end rather than serve its port unmanaged beside
  // the processes a restarted supervisor forks.
  if (process.connected) process.on('disconnect', () => void stop());
  // Ctrl-C reaches the whole process group; the primary coordinates, so a worker just drains.
  process.on('SIGINT', () => void stop());
}

/**
 * Ends a cluster worker on a configuration error with EXIT_CONFIG. The message goes to the supervisor,
 * which prints it once for all its processes (each would hit the same error); alone, it is printed here.
 */
function exitOnConfigError(message: string): Promise<never> {
  if (!process.send || !process.connected) {
    console.error(message);
    process.exit(EXIT_CONFIG);
  }
  // Never settles: the process ends once the message is handed over, and nothing else runs meanwhile.
  return new Promise<never>(() => { process.send!({ type: 'svc:fatal', message }, () => process.exit(EXIT_CONFIG)); });
}
