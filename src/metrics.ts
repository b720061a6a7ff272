import client from 'prom-client';

/** Per-process metrics; the supervisor aggregates every worker's registry for GET /metrics. */
export const registry = client.register;

export const httpRequests = new client.Counter({
  name: 'svc_http_requests_total',
  help: 'HTTP requests by route, method and status',
  labelNames: ['route', 'method', 'status'] as const,
});

export const httpDuration = new client.Histogram({
  name: 'svc_http_request_duration_seconds',
  help: 'HTTP request latency by route',
  labelNames: ['route', 'method'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
});

export const inflightGauge = new client.Gauge({
  name: 'svc_http_inflight_requests',
  help: 'Requests being processed by this HTTP process',
});

export const shedCounter = new client.Counter({
  name: 'svc_http_shed_total',
  help: 'Requests answered 503 because the in-flight budget was exhausted',
});


/** Registers a function that reports a pool's queue depth at each scrape. */
export function trackPoolQueue(pool: string, depth: () => number): void {
  poolSources.set(pool, depth);
}
const poolSources = new Map<string, () => number>();
export const poolQueueGauge = new client.Gauge({
  name: 'svc_pool_queue_depth',
  help: 'Tasks waiting in each pool at scrape time',
  labelNames: ['pool'] as const,
  collect() {
    for (const [pool, depth] of poolSources) this.set({ pool }, depth());
  },
});
