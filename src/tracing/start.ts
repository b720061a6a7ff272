import { context, propagation, trace, type ContextManager } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler,
} from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from './config.js';
import { ScopedContextManager } from './scoped-context.js';
import { SyncContextManager } from './sync-context.js';
import { EdgeSampler, rootRatioOf, setRootRatio } from './edge-sampling.js';
import { setTracingOn } from './tracer.js';

function samplerOf(c: TracingConfig): Sampler {
  switch (c.sampler) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(c.ratio);
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(c.ratio) });
  }
}

/**
 * Starts tracing for this process (one per process, before its clients are made): the OTLP/HTTP JSON
 * exporter behind a batch processor, the configured sampler (with the HTTP server's edge decision:
 * edge-sampling.ts), W3C trace context, and a context
 * manager. The HTTP process (`role` http) never enables promise hooks: its requests carry their context
 * explicitly (sync-context.ts says why). Worker processes, off the hot paths, use AsyncLocalStorage (on
 * only while a trace is open: scoped-context.ts) so a job's span follows it across awaits. close()
 * exports what is left and stops.
 */
export function startTracing(c: TracingConfig, role: string): { close(): Promise<void> } {
  // A test runs a server and workers in one process: they share the one registration, closed by the
  // last, and the HTTP server's explicit context wins, so tests see what an HTTP process does.
  if (shared) {
    shared.users++;
    if (role === 'http' && !(shared.manager instanceof SyncContextManager)) {
      shared.manager.disable();
      context.disable();
      shared.manager = new SyncContextManager();
      context.setGlobalContextManager(shared.manager);
    }
    return closer(shared);
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': c.serviceName, 'service.instance.id': `${role}-${process.pid}`, 'svc.role': role }),
    sampler: new EdgeSampler(samplerOf(c)),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: c.endpoint, headers: { ...c.headers } }), {
      scheduledDelayMillis: c.scheduleDelayMs, maxExportBatchSize: c.maxExportBatchSize, maxQueueSize: c.maxQueueSize,
    })],
  });
  const manager = role === 'http' ? new SyncContextManager() : new ScopedContextManager().enable();
  context.setGlobalContextManager(manager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  setRootRatio(rootRatioOf(c));
  setTracingOn(true);
  shared = { users: 1, provider, manager };
  return closer(shared);
}

interface Registration { users: number; provider: BasicTracerProvider; manager: ContextManager }
let shared: Registration | null = null;

/** Whether this process's spans follow awaits by themselves (workers) or are carried explicitly (the HTTP process). */
export function contextMode(): 'explicit' | 'async' | 'off' {
  return shared === null ? 'off' : shared.manager instanceof SyncContextManager ? 'explicit' : 'async';
}

function closer(s: Registration): { close(): Promise<void> } {
  let closed = false;
  return {
    async close() {
      if (closed) return;
      closed = true;
      // Whatever the others still hold is exported now, not when the last one stops.
      if (--s.users > 0) { await s.provider.forceFlush().catch(() => {}); return; }
      shared = null;
      setTracingOn(false);
      await s.provider.shutdown().catch(() => {});
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
