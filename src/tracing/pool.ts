import { trace } from '@opentelemetry/api';
import { endWithError, tracer, type Context, type Span } from './tracer.js';

/**
 * One crypto operation's trace in the pool: a span from the request's push to its result, with two
 * children, the wait in the queue (push → batch sent to a thread) and the pool's work (sent → result),
 * so time lost to queueing and time spent signing show apart. Only made with tracing on.
 */
export class PoolTrace {
  private readonly span: Span;
  private readonly queued = performance.now();
  private sentAt = 0;

  /** `parent`: the request's context (explicit in the HTTP process, src/tracing/sync-context.ts). */
  constructor(task: string, private readonly parent: Context) {
    this.span = tracer().startSpan(`crypto ${task}`, {}, parent);
  }

  /** The operation left the queue in a batch of `n`. */
  sent(n: number): void {
    this.sentAt = performance.now();
    this.span.setAttribute('svc.crypto.batch_size', n);
    this.span.setAttribute('svc.crypto.queue_wait_ms', Math.round((this.sentAt - this.queued) * 1000) / 1000);
  }

  /** The result came back (or the operation failed). */
  done(err?: unknown): void {
    const now = performance.now();
    const ctx = trace.setSpan(this.parent, this.span);
    const origin = performance.timeOrigin;
    const sentAt = this.sentAt || now;
    tracer().startSpan('queue wait', { startTime: origin + this.queued }, ctx).end(origin + sentAt);
    tracer().startSpan('pool work', { startTime: origin + sentAt }, ctx).end(origin + now);
    if (err) endWithError(this.span, err); else this.span.end();
  }
}
