import { createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import type { CredentialRow, DestinationRow, LogArchiveRepository } from '../store/log-archive.js';
import { openSecret, sealSecret } from '../webhooks/secret-box.js';
import { postWebhook } from '../webhooks/sender.js';
import { decide, type CredentialChange } from './credential-states.js';

/** A relative directory under LOG_ARCHIVE_DIR: administrators cannot make the archive write elsewhere. */
export function safeRelativeDir(dir: string): boolean {
  if (dir === '' || path.isAbsolute(dir) || dir.length > 200) return false;
  const norm = path.posix.normalize(dir.replaceAll('\\', '/'));
  return !norm.startsWith('..') && !norm.split('/').includes('..') && /^[A-Za-z0-9._/-]+$/.test(norm);
}

/**
 * Where a filesystem destination writes now, relative to LOG_ARCHIVE_DIR (`dest-<id>` unless it names a
 * directory; null means the default archive directory). Recorded with every object written, since the
 * destination's directory may change or the destination go away while the object stays where it is.
 */
export function locationOf(d: Pick<DestinationRow, 'id' | 'config'> | null): string {
  if (!d) return 'default';
  return path.posix.normalize(d.config.directory ?? `dest-${d.id}`);
}

/** The absolute directory of a recorded location (always under LOG_ARCHIVE_DIR: locations are checked relative directories). */
export function locationDir(config: Config, location: string): string {
  if (!safeRelativeDir(location)) throw new Error(`archive location ${JSON.stringify(location)} is not a relative directory`);
  return path.resolve(config.logArchiveDir, location);
}

/** The directory a filesystem destination writes to now (null: the default archive directory). */
export function destinationDir(config: Config, d: Pick<DestinationRow, 'id' | 'config'> | null): string {
  return locationDir(config, locationOf(d));
}

/** Writes an object atomically (temp file, fsync, rename), so a crash leaves either no object or the whole one. */
export async function writeObject(dir: string, key: string, obj: Buffer): Promise<void> {
  const file = path.join(dir, key);
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const h = await fs.open(tmp, 'w');
  try { await h.writeFile(obj); await h.sync(); } finally { await h.close(); }
  await fs.rename(tmp, file);
}

export function readObject(dir: string, key: string): Promise<Buffer> {
  return fs.readFile(path.join(dir, key));
}

export async function removeObject(dir: string, key: string): Promise<void> {
  await fs.rm(path.join(dir, key), { force: true });
}

// --- credentials ---

const credAad = (tenantId: string, destinationId: string, version: number) => `log-destination-credential:${tenantId}:${destinationId}:${version}`;

/** Seals a credential; `encrypted_object_store` writes the sealed bytes to a file and answers its path, `encrypted_table` answers the bytes. */
export async function storeCredential(config: Config, tenantId: string, destinationId: string, version: number, backend: CredentialRow['backend'], secret: string)
  : Promise<{ secret_enc: Buffer | null; object_path: string | null }> {
  const sealed = sealSecret(config.keyEncryptionKey, credAad(tenantId, destinationId, version), secret);
  if (backend === 'encrypted_table') return { secret_enc: sealed, object_path: null };
  const rel = path.join(tenantId, destinationId, `v${version}.sealed`);
  await writeObject(path.resolve(config.logSecretsDir), rel, sealed);
  return { secret_enc: null, object_path: rel };
}

export async function openCredential(config: Config, c: CredentialRow): Promise<string> {
  const sealed = c.backend === 'encrypted_table' ? c.secret_enc! : await fs.readFile(path.resolve(config.logSecretsDir, c.object_path!));
  return openSecret(config.keyEncryptionKey, credAad(c.tenant_id, c.destination_id, c.version), sealed);
}

/**
 * Retires a previous credential whose overlap has ended (and ends the destination's overlap state).
 * Run on every read of the credentials and by the periodic health check: the clock is the caller's `now`.
 */
export async function retireOverdue(repo: LogArchiveRepository, d: DestinationRow, now: number): Promise<boolean> {
  const decision = decide({ rotation_state: d.rotation_state, credentials: await repo.credentials(d.id) }, { kind: 'expire', now });
  if (decision.kind !== 'apply') return false;
  await applyCredentialChanges(repo, d.id, decision.changes);
  if (decision.rotation_state) await repo.updateDestination(d.id, { rotation_state: decision.rotation_state });
  return decision.changes.length > 0;
}

/** Writes a decision's credential changes (src/logging/credential-states.ts). */
export async function applyCredentialChanges(repo: LogArchiveRepository, destinationId: string, changes: readonly CredentialChange[]): Promise<void> {
  for (const { version, ...change } of changes) await repo.setCredential(destinationId, version, change);
}

/** The signing secrets of an http_sink: the current one, and the previous one during the overlap. */
export async function signingSecrets(config: Config, repo: LogArchiveRepository, d: DestinationRow): Promise<Array<{ version: number; secret: string }>> {
  await retireOverdue(repo, d, Date.now());
  const creds = (await repo.credentials(d.id)).filter((c) => c.status === 'current' || c.status === 'previous')
    .sort((a, b) => (a.status === 'current' ? -1 : b.status === 'current' ? 1 : b.version - a.version));
  return Promise.all(creds.map(async (c) => ({ version: c.version, secret: await openCredential(config, c) })));
}

/** `X-Svc-Signature`: `v<version>=<hex HMAC-SHA256 of "<timestamp>.<body>">` per secret, comma-separated (current first). */
export function signChunk(secrets: Array<{ version: number; secret: string }>, timestamp: string, body: Buffer): string {
  return secrets.map((s) => `v${s.version}=${createHmac('sha256', s.secret).update(`${timestamp}.`).update(body).digest('hex')}`).join(',');
}

/** POSTs an object to an http_sink, signed with its current credential (and the previous one during the overlap); `extra` headers describe the delivery. */
export async function postToSink(config: Config, repo: LogArchiveRepository, d: DestinationRow, key: string, obj: Buffer, chunkId: string, extra: Record<string, string> = {})
  : Promise<{ ok: boolean; status: number | null; error: string | null }> {
  const secrets = await signingSecrets(config, repo, d);
  if (!secrets.length) return { ok: false, status: null, error: 'no current credential' };
  const ts = String(Math.floor(Date.now() / 1000));
  const r = await postWebhook(d.config.url!, {
    ...extra, 'Content-Type': 'application/octet-stream', 'User-Agent': 'svc-log-archive/1', 'X-Svc-Chunk-Id': chunkId, 'X-Svc-Object-Key': key,
    'X-Svc-Timestamp': ts, 'X-Svc-Signature': signChunk(secrets, ts, obj),
  }, obj, d.config.timeout_ms ?? 10_000, config.webhookAllowPrivate);
  return { ok: r.ok, status: r.status, error: r.error };
}

/**
 * The periodic health of a destination: a filesystem one writes and removes a probe file; an http_sink
 * is POSTed an empty signed probe. `degraded` when the probe passes but the last chunk delivered to it
 * failed, or it answers slowly (over half its timeout).
 */
export async function checkHealth(config: Config, repo: LogArchiveRepository, d: DestinationRow, lastDeliveryFailed: boolean)
  : Promise<{ health: DestinationRow['health']; detail: string | null }> {
  if (d.kind === 'filesystem') {
    try {
      const dir = destinationDir(config, d);
      await writeObject(dir, '.health-probe', Buffer.from(String(Date.now())));
      await removeObject(dir, '.health-probe');
      return { health: lastDeliveryFailed ? 'degraded' : 'healthy', detail: null };
    } catch (err) {
      return { health: 'failing', detail: (err as NodeJS.ErrnoException).code ?? 'write failed' };
    }
  }
  const started = Date.now();
  const r = await postToSink(config, repo, d, '.health-probe', Buffer.alloc(0), 'probe');
  if (!r.ok) return { health: 'failing', detail: r.error };
  const slow = Date.now() - started > (d.config.timeout_ms ?? 10_000) / 2;
  return { health: lastDeliveryFailed || slow ? 'degraded' : 'healthy', detail: slow ? 'slow answer' : lastDeliveryFailed ? 'last delivery failed' : null };
}
