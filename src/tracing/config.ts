/**
 * Tracing settings from the OpenTelemetry SDK environment variables, as the OpenTelemetry specification
 * names them. Tracing is off unless an OTLP endpoint is given (and OTEL_SDK_DISABLED is not true): a
 * server that traces nothing pays nothing.
 */
export interface TracingConfig {
  /** Where spans are posted (OTLP/HTTP with JSON bodies): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly sampler: Sampler;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the traceidratio samplers, 0..1. */
  readonly ratio: number;
  readonly serviceName: string;
  /** Batch span processor (OTEL_BSP_*): delay between exports, spans per export, spans held at most. */
  readonly scheduleDelayMs: number;
  readonly maxExportBatchSize: number;
  readonly maxQueueSize: number;
}

export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type Sampler = (typeof SAMPLERS)[number];

type Env = Record<string, string | undefined>;

/** Reads the OTEL_* variables; problems are added to `problems` (the config's one error list). */
export function tracingFrom(env: Env, problems: string[]): TracingConfig | null {
  const v = (name: string) => { const x = env[name]; return x === undefined || x.trim() === '' ? undefined : x.trim(); };
  if (v('OTEL_SDK_DISABLED') === 'true' || v('OTEL_TRACES_EXPORTER') === 'none') return null;
  const exporter = v('OTEL_TRACES_EXPORTER') ?? 'otlp';
  if (exporter !== 'otlp') { problems.push(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`); return null; }
  const signal = v('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = v('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (!signal && !base) return null;
  const endpoint = signal ?? `${base!.replace(/\/+$/, '')}/v1/traces`;
  try {
    const u = new URL(endpoint);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    problems.push(`OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT must be an http(s) URL, got "${endpoint}"`);
    return null;
  }
  const protocol = v('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? v('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/json';
  if (protocol !== 'http/json') problems.push(`OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: only http/json is supported, got "${protocol}"`);
  const headers: Record<string, string> = {};
  for (const list of [v('OTEL_EXPORTER_OTLP_HEADERS'), v('OTEL_EXPORTER_OTLP_TRACES_HEADERS')]) {
    for (const pair of (list ?? '').split(',')) {
      if (!pair.trim()) continue;
      const eq = pair.indexOf('=');
      if (eq <= 0) { problems.push('OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value'); continue; }
      try { headers[decodeURIComponent(pair.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(pair.slice(eq + 1).trim()); } catch { problems.push('OTEL_EXPORTER_OTLP_HEADERS holds a badly encoded value'); }
    }
  }
  const sampler = (v('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on') as Sampler;
  if (!SAMPLERS.includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${sampler}"`);
  const arg = v('OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${arg}"`);
  const int = (name: string, def: number, min: number, max: number) => {
    const raw = v(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) { problems.push(`${name} must be an integer between ${min} and ${max}, got "${raw}"`); return def; }
    return n;
  };
  const maxQueueSize = int('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  const maxExportBatchSize = int('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000);
  if (maxExportBatchSize > maxQueueSize) problems.push('OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  return Object.freeze({
    endpoint, headers: Object.freeze(headers), sampler, ratio: Number.isFinite(ratio) ? ratio : 1,
    serviceName: v('OTEL_SERVICE_NAME') ?? 'svc',
    scheduleDelayMs: int('OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    maxExportBatchSize, maxQueueSize,
  });
}
