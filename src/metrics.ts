import client from 'prom-client';

/**
 * Per-process metrics; the supervisor aggregates every cluster process's registry for GET /metrics
 * (HTTP processes and every queue worker role). The contract (names, types, labels) is in
 * docs/operations.md "## Metrics": alert rules and dashboards are written against it, so rename nothing.
 *
 * Hot-path metrics are bound to their label values once (`labels()` children kept in module constants
 * or small arrays): prom-client hashes a label object on every call otherwise. Gauges that describe the
 * deployment rather than the process (queues, outbox) are read at scrape time by one process each.
 */
export const registry = client.register;

// process_*, nodejs_* (nodejs_eventloop_lag_p99_seconds among them) in every process that loads this module.
let defaults = false;
/** Starts prom-client's default process metrics once per process. */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  client.collectDefaultMetrics({ register: registry });
}
collectProcessMetrics();

/** One label set's count, kept as a plain number on the hot path and added to its counter at scrape time. */
export interface Tally { inc(): void }
class TallyOf implements Tally {
  n = 0;
  flushed = 0;
  constructor(readonly labels: Partial<Record<string, string>>) {}
  inc(): void { this.n++; }
}

/**
 * A counter whose hot-path increments cost a number add: prom-client hashes the label set on every
 * inc(), bound children included (~190 ns here, against ~4 ns), and a request increments several.
 * Tallies are made once per label set by their owner (a route, a cache) and flushed into the counter
 * when it is collected, so a scrape sees every increment made before it.
 */
function tallied<L extends string>(conf: client.CounterConfiguration<L>): { counter: client.Counter<L>; tally(labels: Partial<Record<L, string>>): Tally } {
  // One tally per label set, however often it is asked for (the server asks again for label sets past its own cache's bound).
  const tallies = new Map<string, TallyOf>();
  const counter = new client.Counter<L>({
    ...conf,
    collect() {
      for (const t of tallies.values()) {
        const d = t.n - t.flushed;
        if (d > 0) { this.inc(t.labels as Partial<Record<L, string>>, d); t.flushed += d; }
      }
    },
  });
  return {
    counter,
    tally: (labels) => {
      const key = JSON.stringify((conf.labelNames ?? []).map((l) => labels[l]));
      let t = tallies.get(key);
      if (!t) { t = new TallyOf(labels); tallies.set(key, t); }
      return t;
    },
  };
}

const httpRequestCounts = tallied({
  name: 'svc_http_requests_total',
  help: 'HTTP requests by route, method and status',
  labelNames: ['route', 'method', 'status'] as const,
});
export const httpRequests = httpRequestCounts.counter;
/** The tally of one route, method and status (the server keeps one per combination it has seen). */
export const httpRequestTally = (route: string, method: string, status: string): Tally => httpRequestCounts.tally({ route, method, status });

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

/** Tenant class of a request: index into TENANT_CLASSES (set on HttpRequest when its tenant is known). */
export const TENANT_CLASSES = ['unknown', 'platform', 'tenant'] as const;
export const TC_UNKNOWN = 0;
/** The platform tenant (src/bootstrap.ts DEFAULT_TENANT_ID) is 'platform'; every other tenant 'tenant'. */
export const tenantClassOf = (tenantId: string): number => (tenantId === 'default' ? 1 : 2);

const tenantClassRequests = tallied({
  name: 'svc_http_requests_by_tenant_class_total',
  help: 'HTTP requests by tenant class (platform, tenant, unknown when no tenant was resolved) and status class',
  labelNames: ['tenant_class', 'status_class'] as const,
});
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
const byTenantClass = TENANT_CLASSES.map((tc) => STATUS_CLASSES.map((sc) => tenantClassRequests.tally({ tenant_class: tc, status_class: sc })));
/** Counts one answered request (bound children: two array reads and an add). */
export function countTenantClass(tenantClass: number, status: number): void {
  const sc = ((status / 100) | 0) - 1;
  byTenantClass[tenantClass]![sc >= 0 && sc < 5 ? sc : 4]!.inc();
}

const cryptoWait = new client.Histogram({
  name: 'svc_crypto_queue_wait_seconds',
  help: 'Time a crypto operation waited between being queued and a pool thread taking its batch',
  labelNames: ['op'] as const,
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
});
export const cryptoWaitSign = cryptoWait.labels('sign');
export const cryptoWaitVerify = cryptoWait.labels('verify');

const admissionRefusals = new client.Counter({
  name: 'svc_admission_refusals_total',
  help: 'Requests refused before their work by reason (inflight, crypto_queue, crypto_queue_full, draining: 503; rate_limit: 429)',
  labelNames: ['reason'] as const,
});
export type RefusalReason = 'inflight' | 'crypto_queue' | 'crypto_queue_full' | 'draining' | 'rate_limit';
export const refusals: Record<RefusalReason, client.Counter<'reason'>['labels'] extends (...a: never[]) => infer C ? C : never> = {
  inflight: admissionRefusals.labels('inflight'),
  crypto_queue: admissionRefusals.labels('crypto_queue'),
  crypto_queue_full: admissionRefusals.labels('crypto_queue_full'),
  draining: admissionRefusals.labels('draining'),
  rate_limit: admissionRefusals.labels('rate_limit'),
};

const cacheRequests = tallied({
  name: 'svc_cache_requests_total',
  help: 'Cache lookups by cache and result (hit, miss)',
  labelNames: ['cache', 'result'] as const,
});
/** Hit and miss tallies of one cache (made once per cache object). */
export function cacheCounters(cache: string): { hit: Tally; miss: Tally } {
  return { hit: cacheRequests.tally({ cache, result: 'hit' }), miss: cacheRequests.tally({ cache, result: 'miss' }) };
}

const redisDuration = new client.Histogram({
  name: 'svc_redis_command_duration_seconds',
  help: 'Redis command latency by connection role, from send to reply; 1 in REDIS_SAMPLE commands is observed (blocking commands never)',
  labelNames: ['role'] as const,
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
});
/** Bound histogram child of a Redis connection role. */
export const redisDurationOf = (role: string) => redisDuration.labels(role);

export const postgresDuration = new client.Histogram({
  name: 'svc_postgres_query_duration_seconds',
  help: 'Postgres statement latency, from first await to result (every statement run through the process client)',
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
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

/** Bounds every read made at scrape time: a slow dependency leaves the gauge out rather than the scrape hanging. */
const SCRAPE_READ_MS = 1000;
function bounded<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error('scrape read timed out')), SCRAPE_READ_MS); })])
    .finally(() => clearTimeout(timer));
}

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export interface QueueReading { counts: Record<(typeof QUEUE_STATES)[number], number>; oldestWaitingAt: number | null }
/** Queues whose state this process reports at scrape time (its role's queues: each queue once in a deployment). */
const queueSources = new Map<string, () => Promise<QueueReading>>();
export function trackQueue(queue: string, read: () => Promise<QueueReading>): () => void {
  queueSources.set(queue, read);
  return () => { if (queueSources.get(queue) === read) queueSources.delete(queue); };
}
/**
 * One reading per scrape shared by the gauges that show it: prom-client starts every metric's collect
 * of a scrape in the same turn of the event loop, so a reading started in this turn is this scrape's.
 */
function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let last: Promise<T> | undefined;
  return () => {
    if (last === undefined) { last = read(); setImmediate(() => { last = undefined; }); }
    return last;
  };
}
const readQueues = shared(async () => {
  const out = new Map<string, QueueReading | null>();
  await Promise.all([...queueSources].map(async ([q, read]) => { out.set(q, await bounded(read()).catch(() => null)); }));
  return out;
});
export const queueJobs = new client.Gauge({
  name: 'svc_queue_jobs',
  help: 'Jobs in each BullMQ queue by state, read at scrape time',
  labelNames: ['queue', 'state'] as const,
  async collect() {
    this.reset();
    if (!queueSources.size) return;
    for (const [queue, r] of await readQueues()) if (r) for (const state of QUEUE_STATES) this.set({ queue, state }, r.counts[state]);
  },
});
export const queueOldestAge = new client.Gauge({
  name: 'svc_queue_oldest_job_age_seconds',
  help: 'Age of the oldest job waiting to be taken in each BullMQ queue (0 when none waits), read at scrape time',
  labelNames: ['queue'] as const,
  async collect() {
    this.reset();
    if (!queueSources.size) return;
    for (const [queue, r] of await readQueues()) {
      if (r) this.set({ queue }, r.oldestWaitingAt === null ? 0 : Math.max(0, (Date.now() - r.oldestWaitingAt) / 1000));
    }
  },
});

/**
 * Gauges without labels that only some processes can read are registered by the process that reads
 * them: a registered one reports 0 even when unset, and 0 from every other process would win a `min`
 * (or read as a value) in the supervisor's merge.
 */
function registerOnce(m: client.Metric): void {
  if (!registry.getSingleMetric((m as unknown as { name: string }).name)) registry.registerMetric(m);
}

/** The webhook worker's reading of the outbox (pending rows, occurred_at of the oldest in ms). */
let outboxSource: (() => Promise<{ pending: number; oldestAt: number | null }>) | undefined;
export function trackOutbox(read: NonNullable<typeof outboxSource>): () => void {
  outboxSource = read;
  registerOnce(outboxPending); registerOnce(outboxLag);
  return () => { if (outboxSource === read) outboxSource = undefined; };
}
const readOutbox = shared(async () => (outboxSource ? bounded(outboxSource()).catch(() => null) : null));
export const outboxPending = new client.Gauge({
  name: 'svc_outbox_pending',
  registers: [],
  help: 'Events in the outbox not yet fanned out to webhook deliveries, read at scrape time',
  aggregator: 'max',
  async collect() {
    this.reset();
    const r = await readOutbox();
    if (r) this.set(r.pending);
  },
});
export const outboxLag = new client.Gauge({
  name: 'svc_outbox_lag_seconds',
  registers: [],
  help: 'Age of the oldest undispatched outbox event (0 when none), read at scrape time',
  aggregator: 'max',
  async collect() {
    this.reset();
    const r = await readOutbox();
    if (r) this.set(r.oldestAt === null ? 0 : Math.max(0, (Date.now() - r.oldestAt) / 1000));
  },
});

const webhookDeliveries = new client.Counter({
  name: 'svc_webhook_deliveries_total',
  help: 'Webhook delivery attempts by result (success, failure) and response status class (none: no response)',
  labelNames: ['result', 'status_class'] as const,
});
/** Counts one delivery attempt. */
export function countWebhookDelivery(ok: boolean, status: number | null | undefined): void {
  const sc = status === null || status === undefined || status < 100 || status > 599 ? 'none' : `${(status / 100) | 0}xx`;
  webhookDeliveries.labels(ok ? 'success' : 'failure', sc).inc();
}

/** This process's revocation check (src/tokens/revocation.ts loaded()). */
let revocationSource: (() => Promise<boolean>) | undefined;
export function trackRevocationState(loaded: () => Promise<boolean>): () => void {
  revocationSource = loaded;
  registerOnce(revocationLoaded);
  return () => { if (revocationSource === loaded) revocationSource = undefined; };
}
export const revocationLoaded = new client.Gauge({
  name: 'svc_revocation_state_loaded',
  registers: [],
  help: '1 when the revocation sentinels are present in Redis for this process, 0 while refilling (checks fail closed); min over processes',
  aggregator: 'min',
  async collect() {
    this.reset();
    if (!revocationSource) return;
    this.set((await bounded(revocationSource()).catch(() => false)) ? 1 : 0);
  },
});

/** Values of svc_lookup_key_rotation_state's label: src/pii/lookup-keys/states.ts, and 'none' without a live rotation. */
export const LOOKUP_ROTATION_STATES = ['none', 'planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete', 'blocked'] as const;
const lookupRotationState = new client.Gauge({
  name: 'svc_lookup_key_rotation_state',
  help: '1 for the lookup-key rotation state this process applies (none: no rotation in progress), 0 for the others',
  labelNames: ['state'] as const,
  aggregator: 'max',
});
const lookupRotationChanged = new client.Gauge({
  name: 'svc_lookup_key_rotation_last_change_timestamp_seconds',
  help: 'When the live lookup-key rotation last changed (its updated_at); absent while no rotation was seen by this process',
  aggregator: 'max',
});
/** Called by the keyring follower after each refresh. */
export function setLookupRotation(state: string | null, updatedAtMs: number | null): void {
  const current = state ?? 'none';
  for (const s of LOOKUP_ROTATION_STATES) lookupRotationState.set({ state: s }, s === current ? 1 : 0);
  if (updatedAtMs !== null) lookupRotationChanged.set(updatedAtMs / 1000);
}

const signingKeyCreated = new client.Gauge({
  name: 'svc_signing_key_created_timestamp_seconds',
  help: 'Creation time of the key this process signs with (keys have no expiry: they sign until rotated); min over processes',
  labelNames: ['alg'] as const,
  aggregator: 'min',
});
/** Called by the key ring after each load. */
export function setSigningKeyCreated(alg: string, createdAtMs: number): void {
  signingKeyCreated.set({ alg }, createdAtMs / 1000);
}
// Tenants' own keys (signing_algs): one series per algorithm, never per tenant (tenant ids would make the
// series count grow with the tenants): the oldest active key of any tenant, which is what a rotation policy bounds.
const tenantSigningKeyOldest = new client.Gauge({
  name: 'svc_tenant_signing_key_oldest_created_timestamp_seconds',
  help: 'Creation time of the oldest key any tenant signs with (its own keys, signing_algs), per algorithm; absent for an algorithm no tenant signs with; min over processes',
  labelNames: ['alg'] as const,
  aggregator: 'min',
});
/** Called by the key ring after each load: the oldest active tenant key's creation time per algorithm. */
export function setTenantSigningKeysOldest(oldestByAlg: ReadonlyMap<string, number>): void {
  // An algorithm no tenant signs with any more loses its series (no stale age left to alert on).
  tenantSigningKeyOldest.reset();
  for (const [alg, createdAtMs] of oldestByAlg) tenantSigningKeyOldest.set({ alg }, createdAtMs / 1000);
}
