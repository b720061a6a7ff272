import { EDGE_SAMPLED, sampleRoot } from './edge-sampling.js';
import { extractContext, SpanKind, SpanStatusCode, tracer, type Context, type Span } from './tracer.js';

/** What the server span reads of a request (src/http/request.ts HttpRequest), and where it keeps the span. */
export interface TracedRequest { readonly method: string; readonly headers: Record<string, string>; readonly requestId: string; span: Span | undefined }

/**
 * Starts a request's server span when it is sampled, and keeps it on the request (`req.span`): a child
 * of the caller's W3C trace context when it sent one, named by the route template (never the raw path,
 * which holds ids), with the method and route; the status is set when the answer is written
 * (endServerSpan). Only called with tracing on. Handlers take their deps with depsFor
 * (src/request-deps.ts), whose clients make their spans under it. No context is made active: nothing
 * would carry it past the handler's first await (sync-context.ts).
 */
export function startServerSpan(req: TracedRequest, routeTemplate: string): void {
  let parent: Context;
  if (req.headers.traceparent === undefined) {
    // No caller's trace: decided here, and a request not sampled makes no span at all (edge-sampling.ts).
    if (!sampleRoot()) return;
    parent = EDGE_SAMPLED;
  } else parent = extractContext(req.headers);
  const span = tracer().startSpan(`${req.method} ${routeTemplate}`, {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': req.method, 'http.route': routeTemplate, 'svc.request_id': req.requestId },
  }, parent);
  // Not sampled by the caller's decision: the request runs as an untraced one (no child span,
  // annotation or log ids are made for it).
  if (span.isRecording()) req.span = span;
}

/** Ends a request's server span with its status (5xx marks the span as failed, with the error's class). */
export function endServerSpan(span: Span, status: number, err?: unknown): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : String(status) });
  span.end();
}

/** A sampled request's trace and span ids, for the server's own log lines (handlers log through depsFor's logger). */
export function spanIds(span: Span | undefined): { trace_id?: string; span_id?: string } {
  if (span === undefined) return NO_IDS;
  const sc = span.spanContext();
  return { trace_id: sc.traceId, span_id: sc.spanId };
}
const NO_IDS = {};
