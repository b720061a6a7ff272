import cluster, { type Worker } from 'node:cluster';
import client from 'prom-client';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { WORKER_ROLES, type WorkerRole } from '../jobs/declare.js';

export type Role = 'http' | WorkerRole;

interface Slot { role: Role; index: number; worker?: Worker; startedAt: number; quickDeaths: number; restartTimer?: NodeJS.Timeout }

const aggregator = new client.AggregatorRegistry();

/**
 * Exit code of a process that stopped on a configuration error no restart can mend (sysexits EX_CONFIG),
 * e.g. a signing key it cannot decrypt. The supervisor then stops every process and exits with it.
 */
export const EXIT_CONFIG = 78;

/**
 * The cluster primary: forks the HTTP processes and the queue worker processes, replaces any that
 * die (backing off when one keeps dying), serves aggregated metrics to workers, and drains on SIGTERM/SIGINT.
 */
export function runSupervisor(config: Config, log: Logger): void {
  const slots: Slot[] = [];
  for (let i = 0; i < config.workers; i++) slots.push({ role: 'http', index: i, startedAt: 0, quickDeaths: 0 });
  if (config.queueWorkers) {
    // One process per role that consumes queues (src/jobs/table.ts); it also registers its role's schedules.
    for (const role of WORKER_ROLES) slots.push({ role, index: 0, startedAt: 0, quickDeaths: 0 });
  }
  let stopping = false;
  let readyCount = 0;
  /** Set when a process stopped with EXIT_CONFIG: what it said (its 'svc:fatal' message), printed once at exit. */
  let fatal: { message: string | undefined } | undefined;

  const fork = (slot: Slot) => {
    slot.startedAt = Date.now();
    const w = cluster.fork({ SVC_ROLE: slot.role, SVC_WORKER_INDEX: String(slot.index) });
    slot.worker = w;
    w.on('message', (msg: { type?: string; id?: string; message?: string }) => {
      if (msg?.type === 'svc:fatal') {
        fatal ??= { message: undefined };
        fatal.message ??= msg.message;
      } else if (msg?.type === 'svc:ready') {
        readyCount++;
        if (readyCount === slots.length) log.info({ url: config.issuer, workers: config.workers }, `svc listening on http://${config.host}:${config.port}`);
      } else if (msg?.type === 'svc:metrics:get' && msg.id) {
        aggregator.clusterMetrics().then(
          (text) => w.isConnected() && w.send({ type: 'svc:metrics:res', id: msg.id, text }),
          (err: Error) => { log.warn({ err: err.message }, 'metrics aggregation failed'); if (w.isConnected()) w.send({ type: 'svc:metrics:res', id: msg.id, text: '' }); },
        );
      }
    });
  };

  cluster.on('exit', (w, code, signal) => {
    const slot = slots.find((s) => s.worker === w);
    if (!slot) return;
    slot.worker = undefined;
    if (stopping) return;
    if (code === EXIT_CONFIG) {
      fatal ??= { message: undefined };
      shutdown('configuration error');
      return;
    }
    const lived = Date.now() - slot.startedAt;
    slot.quickDeaths = lived < 5000 ? slot.quickDeaths + 1 : 0;
    const delay = slot.quickDeaths === 0 ? 0 : Math.min(30_000, 100 * 2 ** (slot.quickDeaths - 1));
    log.warn({ role: slot.role, pid: w.process.pid, code, signal, restartInMs: delay }, 'worker died; replacing it');
    slot.restartTimer = setTimeout(() => fork(slot), delay);
  });

  // Printed once for all processes, after the others stopped (the message may arrive after the exit).
  const exit = (code: number) => {
    if (!fatal) process.exit(code);
    console.error(`svc: stopped on a configuration error: ${fatal.message ?? 'a process exited with EXIT_CONFIG (see its log)'}`);
    process.exit(EXIT_CONFIG);
  };

  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    if (!fatal) log.info({ signal: sig }, 'draining workers');
    for (const s of slots) {
      clearTimeout(s.restartTimer);
      // After a configuration error, processes still starting have no shutdown handler yet: SIGTERM ends
      // those at once and drains the others.
      if (fatal) s.worker?.process.kill('SIGTERM');
      else if (s.worker?.isConnected()) s.worker.send({ type: 'svc:shutdown' });
    }
    const deadline = setTimeout(() => {
      for (const s of slots) s.worker?.process.kill('SIGKILL');
      log.error('workers did not drain in time; killed');
      exit(1);
    }, config.shutdownTimeoutMs + 2000);
    const check = setInterval(() => {
      if (slots.every((s) => !s.worker || s.worker.isDead())) {
        clearInterval(check); clearTimeout(deadline);
        if (!fatal) log.info('all workers stopped');
        exit(0);
      }
    }, 50);
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  for (const s of slots) fork(s);
}
