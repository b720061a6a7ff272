import type { Redis } from 'ioredis';
import { redisDurationOf } from '../metrics.js';

interface SentCommand { name: string; promise: Promise<unknown> }

/** One command in this many is timed: enough for latency quantiles, a counter and a branch for the rest. */
export const REDIS_SAMPLE = 16;
/** Commands that wait by design (a consumer's blocking pop, pub/sub): their time is not latency. */
const BLOCKING = new Set(['blpop', 'brpop', 'brpoplpush', 'blmove', 'blmpop', 'bzpopmin', 'bzpopmax', 'bzmpop', 'xread', 'xreadgroup', 'wait', 'subscribe', 'psubscribe', 'ssubscribe']);

/**
 * Times 1 in REDIS_SAMPLE commands a connection sends into svc_redis_command_duration_seconds{role}
 * (send to reply, pipelines and cluster redirections included). Every command would add a promise
 * reaction per command to the hot paths (introspection sends one or two); a sample keeps their cost
 * within noise while the histogram's quantiles stay right. Its _count is a sample, not a command count.
 */
export function timeRedis<T extends Redis>(redis: T, role: string): T {
  if (role === 'subscriber') return redis;
  const child = redisDurationOf(role);
  const target = redis as unknown as { sendCommand(cmd: SentCommand, ...rest: unknown[]): unknown };
  const send = target.sendCommand.bind(target);
  let n = 0;
  target.sendCommand = (cmd: SentCommand, ...rest: unknown[]) => {
    if (++n >= REDIS_SAMPLE && !BLOCKING.has(cmd.name)) {
      n = 0;
      const started = performance.now();
      const done = () => child.observe((performance.now() - started) / 1000);
      cmd.promise.then(done, done);
    }
    return send(cmd, ...rest);
  };
  return redis;
}
