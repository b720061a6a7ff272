import postgres from 'postgres';
import type { Config } from '../config.js';

export type Sql = postgres.Sql<Record<string, never>>;
export type TxSql = postgres.TransactionSql<Record<string, never>>;

/** The one Postgres client of a process. Values only through tagged templates. */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolSize'>, opts: { max?: number } = {}): Sql {
  return postgres(config.databaseUrl, {
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
