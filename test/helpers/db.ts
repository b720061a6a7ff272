import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from '../../src/sql.js';

/** A throwaway database on the test Postgres server, dropped at the end. */
export async function tempDatabase(): Promise<{ url: string; sql: Sql; drop(): Promise<void> }> {
  const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test');
  const name = `svc_tmp_${randomBytes(4).toString('hex')}`;
  const adminUrl = new URL(base); adminUrl.pathname = '/postgres';
  const admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(base); url.pathname = `/${name}`;
  const sql = createSql({ databaseUrl: url.toString(), databasePoolSize: 2 });
  return {
    url: url.toString(), sql,
    drop: async () => {
      await sql.end({ timeout: 2 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end({ timeout: 2 });
    },
  };
}
