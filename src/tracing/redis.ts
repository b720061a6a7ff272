import type { Redis } from 'ioredis';
import { endWithError, hasActiveSpan, SpanKind, tracer, type Context, type Span } from './tracer.js';

interface SentCommand { name: string; promise: Promise<unknown> }

/**
 * Gives every command a connection sends a client span (`redis GET`), with the command's name only:
 * keys and arguments are left out, since keys hold token ids and hashes of codes. Commands of one
 * pipeline or auto-pipeline are sent together and show as spans starting together; they take the
 * context of the call that opened the batch (docs/decisions.md). A command sent outside any trace
 * (a worker's polling, a relay's idle read) gets no span: it would be a trace of its own per command.
 * Only called with tracing on.
 */
export function traceRedis<T extends Redis>(redis: T, role: string): T {
  const target = redis as unknown as { sendCommand(cmd: SentCommand, ...rest: unknown[]): unknown };
  const send = target.sendCommand.bind(target);
  target.sendCommand = (cmd: SentCommand, ...rest: unknown[]) => {
    // Only within a trace: a worker's polls and a relay's idle reads would otherwise each start one.
    if (!hasActiveSpan()) return send(cmd, ...rest);
    const span = redisSpan(cmd.name.toUpperCase(), role);
    cmd.promise.then(() => span.end(), (err: unknown) => endWithError(span, err));
    return send(cmd, ...rest);
  };
  return redis;
}

/** A Redis client span: the command's (or batch's) name only, never keys or arguments. Under `parent`, or the active context. */
export function redisSpan(name: string, role: string, parent?: Context): Span {
  return tracer().startSpan(`redis ${name}`, {
    kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'db.operation.name': name, 'svc.redis.role': role },
  }, parent);
}
