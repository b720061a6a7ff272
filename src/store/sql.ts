import postgres from 'postgres';
import type { Config } from '../config.js';

export type Sql = postgres.Sql<Record<string, never>>;
export type TxSql = postgres.TransactionSql<Record<string, never>>;
/** The pool or a transaction: what a repository runs its statements on. */
export type Db = Sql | TxSql;

/** The one Postgres client of a process. Values only through tagged templates. */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolSize'>, opts: { max?: number } = {}): Sql {
  const { url, path } = unixSocket(config.databaseUrl);
  return postgres(url, {
    ...(path ? { path } : {}),
    max: opts.max ?? config.databasePoolSize,
    idle_timeout: 30,
    connect_timeout: 5,
    onnotice: () => {},
    // bigint columns (epoch ms) come back as JS numbers; they stay well below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (x: number | bigint) => String(x), parse: (x: string) => Number(x) } },
    transform: { undefined: null },
    connection: { application_name: 'svc' },
  }) as unknown as Sql;
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
