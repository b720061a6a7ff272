import os from 'node:os';
import { tracingFrom, type TracingConfig } from './tracing/config.js';
import { clusterUrl, parseRedisTarget } from './store/redis-url.js';
import { parseTrustedProxies } from './http/client-address.js';

/** The one validated, frozen configuration, read from the environment once at start and passed down. */
export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  readonly issuer: string;
  readonly databaseUrl: string;
  readonly databasePoolSize: number;
  /** Optional streaming replica of DATABASE_URL for admin reads (src/store/replica.ts); absent: everything on the primary. */
  readonly databaseReadUrl: string | undefined;
  readonly redisUrl: string;
  /** Redis for BullMQ queues; defaults to redisUrl. Should be a Redis with noeviction and persistence. */
  readonly queueRedisUrl: string;
  /** Prefix for every Redis key and queue name, so tests and tenants of a shared Redis stay apart. */
  readonly redisPrefix: string;
  /** Replicas that acknowledge a revocation write (Redis WAIT) before it is acknowledged, how long one WAIT may take, and how long an unacknowledged write is retried (src/tokens/revocation.ts). */
  readonly revocationReplicaAcks: number;
  readonly revocationReplicaWaitMs: number;
  readonly revocationRetryMs: number;
  readonly logLevel: string;
  /** OpenTelemetry tracing (OTEL_* variables, src/tracing/config.ts); null: off. */
  readonly tracing: TracingConfig | null;
  readonly shutdownTimeoutMs: number;
  readonly bodyLimitBytes: number;
  /** Requests in flight per HTTP process before excess is shed with 503. */
  readonly maxInflight: number;
  /** Invalid check API keys allowed per client IP per minute, shared by every process (Redis); then 429. */
  readonly checkKeyFailuresPerMinute: number;
  readonly region: string;
  readonly cryptoThreads: number;
  /** Where RSA/EC signature verification runs: inline on the event loop, or batched in the crypto pool. */
  readonly cryptoVerify: 'inline' | 'pool';
  /** Max queued crypto tasks per HTTP process before requests are shed. */
  readonly cryptoQueueMax: number;
  /** Signing operations ahead below which a new one is always admitted (a client pool's concurrency, not overload). */
  readonly cryptoQueueFloor: number;
  /** Past the floor, shed new signing that would wait longer than this (ms, predicted): the request's deadline budget; 0 = count bounds only. */
  readonly cryptoQueueWaitMs: number;
  /** Niceness added to the signing threads, so event loops win the CPU when both want it. */
  readonly cryptoNice: number;
  readonly keyEncryptionKey: Buffer;
  /** Where keyEncryptionKey came from: KEY_ENCRYPTION_KEY, or the built-in development key (outside production only). */
  readonly keyEncryptionKeySource: 'environment' | 'development-default';
  /** Whether NODE_ENV was set rather than defaulted to development (see keyMaterialWriteRefusal). */
  readonly nodeEnvExplicit: boolean;
  readonly tokenSigningAlg: 'RS256' | 'ES256' | 'PS256' | 'EdDSA';
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  readonly smtpUrl: string;
  readonly mailFrom: string;
  readonly webhookAllowPrivate: boolean;
  /** Interval of the BullMQ repeatable job that moves due approval requests and grants to expired. */
  readonly elevationSweepMs: number;
  readonly webhookConcurrency: number;
  /** The webhook worker's relay hands fresh deliveries to its own consumer instead of a BullMQ job (docs/webhooks.md). */
  readonly webhookFreshHandoff: boolean;
  readonly emailConcurrency: number;
  /** How often the jobs worker runs every plugin's health check (ms); a result is cached for three intervals. */
  readonly pluginHealthIntervalMs: number;
  /** Lock of an import/export job (ms): a killed worker's job is taken up again this long after it died. */
  readonly userJobLockMs: number;
  /** Lookup-HMAC rotation (src/pii/lookup-keys/): how often each process reads the control plane, when a silent process stops counting as live, the reindex job's batch and lease, the default grace. */
  readonly lookupKeyringRefreshMs: number;
  readonly lookupKeyringLiveMs: number;
  readonly lookupReindexBatch: number;
  readonly lookupReindexLeaseMs: number;
  readonly lookupRotationGraceSeconds: number;
  readonly queueWorkers: boolean;
  /**
   * Reverse proxies (canonical `address/prefix` ranges, TRUSTED_PROXIES, default none) whose
   * X-Forwarded-For names the client address that every per-address budget counts (src/http/client-address.ts).
   */
  readonly trustedProxies: readonly string[];
  /** One-time codes one client address may request per minute (raise it for load tests from one host). */
  readonly loginIpLimitPerMinute: number;
  /** Device authorization grant (RFC 8628): seconds a device code lives (a tenant may shorten it) and the polling interval it starts with. */
  readonly deviceCodeTtlSeconds: number;
  readonly devicePollIntervalSeconds: number;
  /** WebAuthn relying party id (WEBAUTHN_RP_ID, default the issuer's host name) and accepted origins (WEBAUTHN_ORIGINS, comma-separated, default the issuer's origin). */
  readonly webauthnRpId: string;
  readonly webauthnOrigins: readonly string[];
  /** Log archive (issue 13): default directory of archived chunks, directory of sealed destination credentials. */
  readonly logArchiveDir: string;
  readonly logSecretsDir: string;
  /** How often a process appends its buffered log records (ms), and the most it buffers before appending at once. */
  readonly logFlushMs: number;
  readonly logBufferMax: number;
  /** How often the log worker chunks appended records (ms), and the most records per chunk. */
  readonly logArchiveIntervalMs: number;
  readonly logChunkMaxRecords: number;
  /** How long a destination's previous credential stays valid after a new one is activated (ms; 24 h). */
  readonly logCredentialOverlapMs: number;
  /** How often destinations are health-checked (ms). */
  readonly logDestinationHealthMs: number;
  /**
   * http_sink deliveries (issue 29): how often the log worker sends what is due (ms), and the backoff
   * after a failed attempt: LOG_DELIVERY_RETRY_MS doubled per consecutive failure, at most LOG_DELIVERY_RETRY_MAX_MS.
   */
  readonly logDeliveryIntervalMs: number;
  readonly logDeliveryRetryMs: number;
  readonly logDeliveryRetryMaxMs: number;
  /**
   * Where users' personal data lives (src/pii/): `default` plus PII_PARTITIONS (comma list); each a schema
   * `pii_<name>` in the main database, or in PII_DATABASE_URL_<NAME> when that is set.
   */
  readonly piiPartitions: readonly PiiPartitionConfig[];
}

export interface PiiPartitionConfig { readonly name: string; readonly databaseUrl: string | undefined }

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

// A key for local development only; production must set KEY_ENCRYPTION_KEY (checked below).
const DEV_KEY_ENCRYPTION_KEY = '6465762d6f6e6c792d6b65792d646f2d6e6f742d7573652d696e2d70726f6421';

/**
 * Why this configuration must not write new key material (signing keys, client secret hashes, data keys
 * sealed under KEY_ENCRYPTION_KEY), or undefined when it may. Only `svc start` defaults NODE_ENV to
 * production; the other commands default to development, where an unset KEY_ENCRYPTION_KEY means the
 * development key. Material sealed under that key by accident cannot be read by nodes running with the
 * real key (they would refuse to start), so it is written only when development (or test) was asked for.
 */
export function keyMaterialWriteRefusal(config: Pick<Config, 'keyEncryptionKeySource' | 'nodeEnvExplicit'>): string | undefined {
  if (config.keyEncryptionKeySource === 'environment' || config.nodeEnvExplicit) return undefined;
  return 'KEY_ENCRYPTION_KEY is not set: refusing to write key material sealed under the built-in development key, which nodes running with the real key could not read; set KEY_ENCRYPTION_KEY (or NODE_ENV=development for a local setup)';
}

/** Reads and validates every setting; collects all problems so an operator fixes them in one pass. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string, def: string): string => {
    const v = env[name];
    return v === undefined || v === '' ? def : v;
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (!/^-?\d+$/.test(raw)) { problems.push(`${name} must be an integer, got "${raw}"`); return def; }
    const n = Number(raw);
    if (n < min || n > max) { problems.push(`${name} must be between ${min} and ${max}, got ${n}`); return def; }
    return n;
  };
  const bool = (name: string, def: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return def;
  };
  const oneOf = <T extends string>(name: string, def: T, values: readonly T[]): T => {
    const v = str(name, def);
    if (!values.includes(v as T)) { problems.push(`${name} must be one of ${values.join(', ')}, got "${v}"`); return def; }
    return v as T;
  };
  const url = (name: string, def: string, protocols: string[]): string => {
    const v = str(name, def);
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) problems.push(`${name} must use ${protocols.join(' or ')}, got "${u.protocol}"`);
    } catch {
      problems.push(`${name} is not a valid URL`);
    }
    return v;
  };

  const nodeEnv = str('NODE_ENV', 'development');
  if (!['development', 'production', 'test'].includes(nodeEnv)) problems.push(`NODE_ENV must be development, production or test, got "${nodeEnv}"`);
  const host = str('HOST', '127.0.0.1');
  const port = int('PORT', 8080, 0, 65535);
  const issuerDefault = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const issuer = url('ISSUER', issuerDefault, ['http:', 'https:']).replace(/\/+$/, '');
  if (nodeEnv === 'production' && issuer.startsWith('http:')) problems.push('ISSUER must be https in production');

  const kekHex = str('KEY_ENCRYPTION_KEY', nodeEnv === 'production' ? '' : DEV_KEY_ENCRYPTION_KEY);
  let keyEncryptionKey = Buffer.alloc(32);
  if (!/^[0-9a-fA-F]{64}$/.test(kekHex)) problems.push('KEY_ENCRYPTION_KEY must be 64 hex characters (32 bytes); required in production');
  else keyEncryptionKey = Buffer.from(kekHex, 'hex');
  if (nodeEnv === 'production' && kekHex.toLowerCase() === DEV_KEY_ENCRYPTION_KEY) problems.push('KEY_ENCRYPTION_KEY must not be the development key in production (it is published in the source)');

  const alg = str('TOKEN_SIGNING_ALG', 'RS256');
  if (alg !== 'RS256' && alg !== 'ES256' && alg !== 'PS256' && alg !== 'EdDSA') problems.push(`TOKEN_SIGNING_ALG must be RS256, ES256, PS256 or EdDSA, got "${alg}"`);

  const region = str('REGION', 'local');
  if (!/^[a-z0-9-]{1,32}$/.test(region)) problems.push('REGION must be 1 to 32 of a-z, 0-9 and "-" (it is part of every jti)');
  const redisPrefix = str('REDIS_PREFIX', 'svc:');
  if (!/^[A-Za-z0-9:_-]{1,64}$/.test(redisPrefix)) problems.push('REDIS_PREFIX must be 1 to 64 of A-Z a-z 0-9 : _ -');

  // One server or a Redis Cluster (src/store/redis-url.ts); REDIS_CLUSTER_NODES names a cluster's nodes.
  const redisAddress = (name: string, v: string): string => {
    try { parseRedisTarget(v); } catch (err) { problems.push(`${name} ${(err as Error).message}`); }
    return v;
  };
  const redisUrl = env.REDIS_CLUSTER_NODES ? redisAddress('REDIS_CLUSTER_NODES', clusterUrl(env.REDIS_CLUSTER_NODES)) : redisAddress('REDIS_URL', str('REDIS_URL', 'redis://127.0.0.1:6379'));
  const isClusterUrl = (v: string) => { try { return parseRedisTarget(v).kind === 'cluster'; } catch { return false; } };
  const cpus = Math.max(1, os.availableParallelism());
  const piiNames = ['default', ...str('PII_PARTITIONS', '').split(',').map((n) => n.trim()).filter((n) => n && n !== 'default')];
  for (const n of piiNames) if (!/^[a-z][a-z0-9_]{0,30}$/.test(n)) problems.push(`PII_PARTITIONS entries must be 1 to 31 of a-z, 0-9 and "_", starting with a letter, got "${n}"`);
  const piiPartitions = Object.freeze([...new Set(piiNames)].map((name) => {
    const key = `PII_DATABASE_URL_${name.toUpperCase()}`;
    return Object.freeze({ name, databaseUrl: env[key] ? url(key, '', ['postgres:', 'postgresql:']) : undefined });
  }));
  const trusted = parseTrustedProxies(str('TRUSTED_PROXIES', ''));
  problems.push(...trusted.problems);
  const config: Config = {
    env: nodeEnv as Config['env'],
    host,
    port,
    workers: int('WORKERS', cpus, 1, 256),
    issuer,
    databaseUrl: url('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/svc', ['postgres:', 'postgresql:']),
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 200),
    databaseReadUrl: env.DATABASE_READ_URL ? url('DATABASE_READ_URL', '', ['postgres:', 'postgresql:']) : undefined,
    redisUrl,
    queueRedisUrl: env.QUEUE_REDIS_URL ? redisAddress('QUEUE_REDIS_URL', env.QUEUE_REDIS_URL) : redisUrl,
    redisPrefix,
    // A cluster is run with a replica per master (README); one Redis has none unless the operator says so.
    revocationReplicaAcks: int('REVOCATION_REPLICA_ACKS', isClusterUrl(redisUrl) ? 1 : 0, 0, 16),
    revocationReplicaWaitMs: int('REVOCATION_REPLICA_WAIT_MS', 500, 1, 60_000),
    revocationRetryMs: int('REVOCATION_RETRY_MS', 30_000, 0, 3_600_000),
    logLevel: str('LOG_LEVEL', nodeEnv === 'test' ? 'warn' : 'info'),
    tracing: tracingFrom(env, problems),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
    maxInflight: int('MAX_INFLIGHT', 2048, 1, 1_000_000),
    checkKeyFailuresPerMinute: int('CHECK_KEY_FAILURES_PER_MINUTE', 30, 1, 1_000_000),
    region,
    // Measured on 2 cores (perf/RESULTS.md): one signing thread per CPU in each HTTP process beat CPUs - 1 and inline.
    cryptoThreads: int('CRYPTO_THREADS', cpus, 0, 64),
    cryptoVerify: oneOf('CRYPTO_VERIFY', 'inline', ['inline', 'pool']),
    // Admission (src/tokens/admission.ts, issue 19): a memory bound, a concurrency floor that a steady
    // closed loop of 256 connections over 2 processes never crosses, and a deadline budget past it.
    cryptoQueueMax: int('CRYPTO_QUEUE_MAX', 1024, 1, 1_000_000),
    cryptoQueueFloor: int('CRYPTO_QUEUE_FLOOR', 192, 0, 1_000_000),
    cryptoQueueWaitMs: int('CRYPTO_QUEUE_WAIT_MS', 100, 0, 60_000),
    cryptoNice: int('CRYPTO_NICE', 3, 0, 19),
    keyEncryptionKey,
    keyEncryptionKeySource: env.KEY_ENCRYPTION_KEY ? 'environment' : 'development-default',
    nodeEnvExplicit: Boolean(env.NODE_ENV),
    tokenSigningAlg: alg as Config['tokenSigningAlg'],
    accessTokenTtlSeconds: int('ACCESS_TOKEN_TTL_SECONDS', 900, 30, 86_400),
    refreshTokenTtlSeconds: int('REFRESH_TOKEN_TTL_SECONDS', 30 * 86_400, 60, 365 * 86_400),
    smtpUrl: url('SMTP_URL', 'smtp://127.0.0.1:2525', ['smtp:', 'smtps:']),
    mailFrom: str('MAIL_FROM', 'svc <no-reply@svc.local>'),
    webhookAllowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', nodeEnv !== 'production'),
    elevationSweepMs: int('ELEVATION_SWEEP_MS', 15_000, 200, 3_600_000),
    webhookConcurrency: int('WEBHOOK_CONCURRENCY', 128, 1, 1000),
    webhookFreshHandoff: bool('WEBHOOK_FRESH_HANDOFF', true),
    emailConcurrency: int('EMAIL_CONCURRENCY', 32, 1, 1000),
    pluginHealthIntervalMs: int('PLUGIN_HEALTH_INTERVAL_MS', 30_000, 100, 3_600_000),
    userJobLockMs: int('USER_JOB_LOCK_MS', 30_000, 1000, 600_000),
    lookupKeyringRefreshMs: int('LOOKUP_KEYRING_REFRESH_MS', 1000, 50, 60_000),
    lookupKeyringLiveMs: int('LOOKUP_KEYRING_LIVE_MS', 10_000, 500, 600_000),
    lookupReindexBatch: int('LOOKUP_REINDEX_BATCH', 500, 1, 10_000),
    lookupReindexLeaseMs: int('LOOKUP_REINDEX_LEASE_MS', 30_000, 500, 3_600_000),
    lookupRotationGraceSeconds: int('LOOKUP_ROTATION_GRACE_SECONDS', 7 * 86_400, 0, 365 * 86_400),
    queueWorkers: bool('QUEUE_WORKERS', true),
    trustedProxies: Object.freeze(trusted.ranges),
    loginIpLimitPerMinute: int('LOGIN_IP_LIMIT_PER_MINUTE', 300, 1, 10_000_000),
    deviceCodeTtlSeconds: int('DEVICE_CODE_TTL_SECONDS', 600, 10, 3600),
    devicePollIntervalSeconds: int('DEVICE_POLL_INTERVAL_SECONDS', 5, 1, 60),
    logArchiveDir: str('LOG_ARCHIVE_DIR', '.data/log-archive'),
    logSecretsDir: str('LOG_SECRETS_DIR', '.data/log-secrets'),
    logFlushMs: int('LOG_FLUSH_MS', 250, 10, 60_000),
    logBufferMax: int('LOG_BUFFER_MAX', 2000, 1, 1_000_000),
    logArchiveIntervalMs: int('LOG_ARCHIVE_INTERVAL_MS', 5000, 100, 3_600_000),
    logChunkMaxRecords: int('LOG_CHUNK_MAX_RECORDS', 5000, 1, 1_000_000),
    logCredentialOverlapMs: int('LOG_CREDENTIAL_OVERLAP_MS', 86_400_000, 0, 30 * 86_400_000),
    logDestinationHealthMs: int('LOG_DESTINATION_HEALTH_INTERVAL_MS', 60_000, 100, 3_600_000),
    logDeliveryIntervalMs: int('LOG_DELIVERY_INTERVAL_MS', 2000, 100, 3_600_000),
    logDeliveryRetryMs: int('LOG_DELIVERY_RETRY_MS', 5000, 10, 3_600_000),
    logDeliveryRetryMaxMs: int('LOG_DELIVERY_RETRY_MAX_MS', 3_600_000, 10, 7 * 86_400_000),
    piiPartitions,
    webauthnRpId: str('WEBAUTHN_RP_ID', new URL(issuer).hostname),
    webauthnOrigins: Object.freeze(str('WEBAUTHN_ORIGINS', new URL(issuer).origin).split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean)),
  };
  for (const o of config.webauthnOrigins) if (!/^https?:\/\/[^/]+$/.test(o)) problems.push(`WEBAUTHN_ORIGINS entries must be origins (scheme://host[:port]), got "${o}"`);
  // A process refuses to index when it has not refreshed for half the live window: a refresh must fit in it several times.
  if (config.lookupKeyringRefreshMs * 3 > config.lookupKeyringLiveMs) problems.push('LOOKUP_KEYRING_LIVE_MS must be at least 3 × LOOKUP_KEYRING_REFRESH_MS');
  if (!/^[a-z0-9.-]+$/i.test(config.webauthnRpId)) problems.push('WEBAUTHN_RP_ID must be a host name');
  const validLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!validLevels.includes(config.logLevel)) problems.push(`LOG_LEVEL must be one of ${validLevels.join(', ')}`);
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(config);
}
