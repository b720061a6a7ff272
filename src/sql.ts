import type PG from 'postgres';
import postgres from 'postgres';
import type { Config } from './config.js';
import { timeStatement } from './sql-metrics.js';
import { hookStatements } from './sql-statements.js';
import { traceStatement } from './tracing/sql.js';
import { tracingOn } from './tracing/tracer.js';

// postgres.js's own array codec (not in its exports map, so loaded by path next to its entry point).
const { arrayParser, arraySerializer } = await import(new URL('./types.js', import.meta.resolve('postgres')).href) as {
  arrayParser: (x: string, parser: ((x: string) => unknown) | undefined, typarray: number) => unknown;
  arraySerializer: (xs: unknown[], serializer: ((x: unknown) => string) | undefined, options: unknown, typarray: number) => string;
};

/**
 * Built-in element type OID -> its array type OID (fixed in pg_type.dat since Postgres 8; we use no
 * array of a user-defined type). Registered once per client instead of postgres.js's per-connection
 * `fetch_types` query, which runs in a promise nobody awaits: a connection cut between the handshake
 * and that query surfaced as an unhandled rejection and crashed the process (test/ops/pg-handshake-flap).
 */
const ARRAY_TYPES: Record<number, number> = {
  16: 1000, 17: 1001, 18: 1002, 19: 1003, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 26: 1028, 114: 199, 700: 1021, 701: 1022,
  1042: 1014, 1043: 1015, 1082: 1182, 1114: 1115, 1184: 1185, 1700: 1231, 2950: 2951, 3802: 3807,
};

interface PgOptions {
  parsers: Record<number, ((x: string) => unknown) & { array?: boolean }>;
  serializers: Record<number, (x: unknown) => string>;
  shared: { typeArrayMap: Record<number, number> };
}

/** What postgres.js's addArrayType does for each fetched type, done once with the static table. */
function registerArrayTypes(options: PgOptions): void {
  for (const [oidText, typarray] of Object.entries(ARRAY_TYPES)) {
    const oid = Number(oidText);
    if (options.parsers[typarray] && options.serializers[typarray]) continue;
    const parser = options.parsers[oid];
    options.shared.typeArrayMap[oid] = typarray;
    const parse = ((xs: string) => arrayParser(xs, parser, typarray)) as ((x: string) => unknown) & { array?: boolean };
    parse.array = true;
    options.parsers[typarray] = parse;
    options.serializers[typarray] = (xs) => arraySerializer(xs as unknown[], options.serializers[oid], options, typarray);
  }
}

export type Sql = PG.Sql<Record<string, never>>;
export type TxSql = PG.TransactionSql<Record<string, never>>;
/** The pool or a transaction: what a repository runs its statements on. */
export type Db = Sql | TxSql;

/**
 * The one Postgres client of a process. Values only through tagged templates. `asyncCommit`: a pool
 * whose commits do not wait for the WAL flush (synchronous_commit off), for writes that can be lost in
 * a Postgres crash because they are derived again (see docs/webhooks.md); never for anything else.
 */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolSize'>, opts: { max?: number; asyncCommit?: boolean } = {}): Sql {
  const { url, path } = unixSocket(config.databaseUrl);
  const sql = postgres(url, {
    ...(path ? { path } : {}),
    fetch_types: false,
    max: opts.max ?? config.databasePoolSize,
    idle_timeout: 30,
    connect_timeout: 5,
    // Reconnect attempts back off at most 1 s (postgres.js: up to 20 s after many failures, so after a
    // Postgres restart statements waited for a connection that slept for seconds after Postgres was back).
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    onnotice: () => {},
    // bigint columns (epoch ms) come back as JS numbers; they stay well below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (x: number | bigint) => String(x), parse: (x: string) => Number(x) } },
    transform: { undefined: null },
    connection: { application_name: 'svc', ...(opts.asyncCommit ? { synchronous_commit: 'off' } : {}) },
  });
  registerArrayTypes(sql.options as unknown as PgOptions);
  return hookStatements(sql, tracingOn ? [timeStatement, traceStatement] : [timeStatement]) as unknown as Sql;
}

/**
 * libpq's `?host=/socket/dir` form (e.g. `postgres://svc@localhost/svc?host=/var/run/postgresql`):
 * the client connects over the Unix socket in that directory, as psql and libpq would.
 */
export function unixSocket(databaseUrl: string): { url: string; path: string | undefined } {
  const u = new URL(databaseUrl);
  const dir = u.searchParams.get('host');
  if (!dir?.startsWith('/')) return { url: databaseUrl, path: undefined };
  u.searchParams.delete('host');
  return { url: u.toString(), path: `${dir.replace(/\/+$/, '')}/.s.PGSQL.${u.port || '5432'}` };
}

/**
 * Buffers as a `bytea[]` parameter: a plain array of Buffers would be sent as one bytea, and an array of
 * `\\x..` strings is text[], whose cast to bytea[] keeps the characters.
 */
export function byteaArray(db: Db, bufs: readonly Buffer[]): ReturnType<Db['array']> {
  return db.array(bufs as never, 1001);
}
