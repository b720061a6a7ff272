import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from '../sql.js';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../ops/migrations');

// Arbitrary constant; processes starting together take this advisory lock so only one migrates.
const MIGRATION_LOCK = 7_414_200_001;

export interface MigrationResult { applied: string[]; skipped: number }

/**
 * Applies pending plain-SQL migrations from ops/migrations in name order in one transaction (all or none),
 * recorded in schema_migrations. Append-only: never edit or reorder an applied file (checked by hash).
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  const files = fs.readdirSync(dir).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`create table if not exists schema_migrations (
      name text primary key, sha256 text not null, applied_at timestamptz not null default now())`;
    const done = new Map((await tx<{ name: string; sha256: string }[]>`select name, sha256 from schema_migrations`).map((r) => [r.name, r.sha256]));
    const applied: string[] = [];
    for (const f of files) {
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      const hash = createHash('sha256').update(text).digest('hex');
      const prev = done.get(f);
      if (prev !== undefined) {
        if (prev !== hash) throw new Error(`migration ${f} was edited after it was applied; add a new migration instead`);
        continue;
      }
      await tx.savepoint(async (sp) => { await sp.unsafe(text); });
      await tx`insert into schema_migrations (name, sha256) values (${f}, ${hash})`;
      applied.push(f);
    }
    return { applied, skipped: files.length - applied.length };
  }) as Promise<MigrationResult>;
}
