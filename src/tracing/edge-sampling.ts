import { createContextKey, ROOT_CONTEXT, SamplingDecision, trace, TraceFlags, type Attributes, type Context, type Link, type SpanKind } from '@opentelemetry/api';
import type { Sampler, SamplingResult } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from './config.js';

/**
 * Head sampling at the HTTP server's edge. A request that brings no trace context is decided before any
 * span is made, so at a 1% ratio the other 99 requests make no span, no trace or span id and no context
 * (the SDK's sampler runs inside startSpan, after the ids and a non-recording span are made: in run 94's
 * profile that was ~2.6% of the HTTP process's busy time). A request with a `traceparent` is left to the
 * configured sampler, as before.
 */

const EDGE = createContextKey('svc.tracing.edge-sampled');
/** The context the server span of a request sampled here starts in: EdgeSampler records it. */
export const EDGE_SAMPLED: Context = ROOT_CONTEXT.setValue(EDGE, true);

let rootRatio = 1;

/** The share of requests without a caller's trace that the configured sampler would record. */
export function rootRatioOf(c: Pick<TracingConfig, 'sampler' | 'ratio'>): number {
  switch (c.sampler) {
    case 'always_on': case 'parentbased_always_on': return 1;
    case 'always_off': case 'parentbased_always_off': return 0;
    case 'traceidratio': case 'parentbased_traceidratio': return c.ratio;
  }
}

/** Set by startTracing. */
export function setRootRatio(ratio: number): void { rootRatio = ratio; }

/** Whether a request without a caller's trace is traced: the ratio's draw (a trace id's ratio test is one too). */
export function sampleRoot(): boolean {
  return rootRatio >= 1 || (rootRatio > 0 && Math.random() < rootRatio);
}

const RECORD: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };
const DROP: SamplingResult = { decision: SamplingDecision.NOT_RECORD };

/**
 * The configured sampler, plus: a span started in EDGE_SAMPLED is recorded (the edge decided), and a span
 * whose parent is in this process follows it, so a sampled request's trace is whole under the plain
 * `traceidratio` sampler too (which would otherwise test each child's trace id again). Spans with a
 * remote parent or none are the configured sampler's.
 */
export class EdgeSampler implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(ctx: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    if (ctx.getValue(EDGE) === true) return RECORD;
    const parent = trace.getSpanContext(ctx);
    if (parent !== undefined && !parent.isRemote && trace.isSpanContextValid(parent)) return (parent.traceFlags & TraceFlags.SAMPLED) !== 0 ? RECORD : DROP;
    return this.inner.shouldSample(ctx, traceId, name, kind, attributes, links);
  }

  toString(): string { return `EdgeSampler{${this.inner.toString()}}`; }
}
