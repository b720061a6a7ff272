import { stringify } from 'csv-stringify';
import type { Mapping } from '../field-mapping/model.js';
import type { Store } from '../store/index.js';
import type { User } from '../store/users.js';
import type { Cursor } from '../store/cursor.js';

export const EXPORT_TTL_MS = 3600_000;
const PAGE = 1000;

/** The user field a catalog path names. */
function fieldOf(u: User, path: string): unknown {
  if (path === 'email') return u.email;
  if (path === 'name') return u.name;
  if (path === 'email_verified') return u.email_verified;
  if (path.startsWith('metadata.')) return u.metadata?.[path.slice(9)];
  return undefined;
}

const cell = (v: unknown): string => (v === null || v === undefined ? '' : Array.isArray(v) ? v.join(',') : typeof v === 'boolean' ? (v ? 'true' : 'false') : String(v));

/**
 * The mapping in reverse: each column gets the user field its source path is copied to (the edge from
 * that path), so the file imports again with the same mapping. Users are read page by page and
 * streamed through csv-stringify.
 */
export async function runExport(store: Store, tenantId: string, jobId: string): Promise<'succeeded' | 'cancelled' | 'gone'> {
  const repo = store.forTenant(tenantId).userJobs;
  const job = await repo.start(jobId);
  if (!job) return 'gone';
  const m = job.mapping as Mapping;
  const byId = new Map(m.catalog.entries.map((e) => [e.id, e]));
  const columns = Object.keys(m.columnToPath);
  // A transform that combines several inputs (concat, join, fallback) cannot be split again: the whole
  // value goes to the column of its first input and the others stay empty, which imports back the same.
  const secondary = new Set((m.transforms ?? []).flatMap((t) => t.inputEdgeIds.slice(1)));
  const pathOf = columns.map((c) => {
    const edge = m.edges.find((e) => e.sourceRef === m.columnToPath[c]);
    return edge && !secondary.has(edge.id) ? byId.get(edge.targetRef)?.path : undefined;
  });
  const out = stringify({ header: true, columns });
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer | string) => chunks.push(Buffer.from(c)));
  const ended = new Promise<void>((resolve, reject) => { out.on('end', resolve); out.on('error', reject); });
  let cursor: Cursor | undefined;
  let total = 0;
  for (;;) {
    const rows = await store.forTenant(tenantId).users.list({ limit: PAGE, cursor });
    const page = rows.slice(0, PAGE);
    for (const u of page) {
      // Back-pressure: wait for the stringifier to drain before writing more.
      if (!out.write(pathOf.map((p) => (p ? cell(fieldOf(u, p)) : '')))) await new Promise((r) => out.once('drain', r));
      total++;
    }
    if (rows.length <= PAGE) break;
    const last = page[page.length - 1]!;
    cursor = { createdAt: Number(last.created_at), id: last.id };
  }
  out.end();
  await ended;
  await repo.finish(jobId, 'succeeded', { totalRows: total, resultCsv: Buffer.concat(chunks), expiresAt: Date.now() + EXPORT_TTL_MS });
  return 'succeeded';
}
