import type { QueueReading } from '../metrics.js';
import type { JobQueues } from './queues.js';
import type { QueueName } from './table.js';

/**
 * One queue's state for svc_queue_jobs and svc_queue_oldest_job_age_seconds: its counts (one BullMQ
 * script call) and the oldest job waiting to be taken (one range read of a single job): bounded cost
 * whatever the backlog. Prioritized jobs wait too and count as waiting.
 */
export async function readQueue(jobs: JobQueues, name: QueueName): Promise<QueueReading> {
  const q = await jobs.queue(name);
  const [c, oldest] = await Promise.all([
    q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
    // asc: the job the next consumer takes, which is the one that has waited longest.
    q.getJobs(['waiting'], 0, 0, true),
  ]);
  return {
    counts: { waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, delayed: c.delayed ?? 0, failed: c.failed ?? 0 },
    oldestWaitingAt: oldest[0]?.timestamp ?? null,
  };
}
