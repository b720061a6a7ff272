import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

/**
 * Whether this process traces. Set once by startTracing (src/tracing/start.ts) before anything is
 * built; every instrumented path reads it first, so with tracing off no span, context or attribute
 * object is made on the hot paths.
 */
export let tracingOn = false;

/** Set by startTracing only. */
export function setTracingOn(on: boolean): void { tracingOn = on; }

/** svc's one tracer (the global provider's, registered by startTracing). */
export const tracer = () => trace.getTracer('svc');

export { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span };

/** The context a request's W3C trace headers (traceparent, tracestate) carry, or the root context. */
export function extractContext(headers: Record<string, string>): Context {
  return headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, headers);
}

/** Writes the active context's traceparent (and tracestate) into `carrier`, for a request or a job that continues the trace. */
export function injectContext(carrier: Record<string, string>, ctx: Context = context.active()): Record<string, string> {
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * Adds attributes to a request's span (tenant, client id, ...), or to the active span when none is
 * given (workers). A no-op with tracing off. Callers pass identifiers only: never a token, secret,
 * code or email address.
 */
export function annotate(attrs: Attributes, span?: Span): void {
  if (tracingOn) (span ?? trace.getActiveSpan())?.setAttributes(attrs);
}

/** Whether a span is active here: client spans (Redis, Postgres) are made only under one. */
export function hasActiveSpan(): boolean {
  return trace.getSpan(context.active()) !== undefined;
}

/** Ends a span with an error status (the error's class name, never its message: messages may quote input). */
export function endWithError(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
  span.end();
}

/**
 * Continues a trace kept as a traceparent (an outbox event's, carried by its delivery) in a client span,
 * and hands `fn` the headers that carry this span to the receiver. With tracing off, or no trace kept,
 * just runs `fn` with no headers.
 */
export async function continueTrace<T>(traceparent: string | null | undefined, name: string, attrs: Attributes, fn: (headers: Record<string, string>, span?: Span) => Promise<T>): Promise<T> {
  if (!tracingOn || !traceparent) return fn({});
  const parent = propagation.extract(ROOT_CONTEXT, { traceparent });
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes: attrs }, parent);
  const ctx = trace.setSpan(parent, span);
  try {
    const out = await context.with(ctx, () => fn(injectContext({}, ctx), span));
    span.end();
    return out;
  } catch (err) {
    endWithError(span, err);
    throw err;
  }
}

/**
 * A span under a trace kept as a traceparent (an outbox event's), for work done on its behalf outside
 * any request (the relay queueing its delivery); the caller ends it. Undefined with tracing off or no trace kept.
 */
export function spanUnder(traceparent: string | null | undefined, name: string, attrs: Attributes): Span | undefined {
  if (!tracingOn || !traceparent) return undefined;
  return tracer().startSpan(name, { kind: SpanKind.PRODUCER, attributes: attrs }, propagation.extract(ROOT_CONTEXT, { traceparent }));
}

/** Runs `fn` in a child span of the active one; with tracing off just runs it. */
export async function inSpan<T>(name: string, attrs: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn) return fn();
  const span = tracer().startSpan(name, { kind: SpanKind.INTERNAL, attributes: attrs });
  try {
    const out = await context.with(trace.setSpan(context.active(), span), fn);
    span.end();
    return out;
  } catch (err) {
    endWithError(span, err);
    throw err;
  }
}

/** The active span's W3C traceparent when it is sampled (what an outbox row keeps for its deliveries), else null. */
export function currentTraceparent(): string | null {
  return tracingOn ? traceparentOf(context.active()) : null;
}

/** The W3C traceparent of a context's span when it is sampled (what an outbox row keeps), else null. */
export function traceparentOf(ctx: Context): string | null {
  const sc = trace.getSpan(ctx)?.spanContext();
  return sc && (sc.traceFlags & 1) === 1 ? `00-${sc.traceId}-${sc.spanId}-01` : null;
}

/** The trace and span ids of a sampled request's context (none without one), for a service's own log lines about that request. */
export function logIdsOf(ctx: Context | undefined): Record<string, string> {
  const sc = ctx === undefined ? undefined : trace.getSpan(ctx)?.spanContext();
  return sc ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** The trace and span ids of the active span, for log lines of a traced request. */
export function logIds(): Record<string, string> {
  return tracingOn ? logIdsOf(context.active()) : {};
}
