import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';

// A chunk object: a magic line, one JSON header line (everything needed to decrypt it given the
// registry version's key), then the AES-256-GCM ciphertext of the gzip of the NDJSON records. The
// data key is random per chunk and stored only wrapped (AES-256-GCM) under the version's key; the
// header is the AAD of the ciphertext, so a header swapped onto another body does not decrypt.
const MAGIC = 'SVCLOG1\n';

export interface ChunkHeader {
  chunk_id: string; tenant_id: string; log_type: string; plane: string; hour_start: number;
  key_registry_id: string; key_version: number; wrapped_key: string; iv: string; alg: 'AES-256-GCM'; compression: 'gzip';
}

function gcm(key: Buffer, plain: Buffer, aad?: Buffer): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  if (aad) c.setAAD(aad);
  const ct = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), ct]);
}

function ungcm(key: Buffer, sealed: Buffer, aad?: Buffer): Buffer {
  const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  if (aad) d.setAAD(aad);
  d.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([d.update(sealed.subarray(28)), d.final()]);
}

/** A registry version's key material sealed under KEY_ENCRYPTION_KEY, bound to its tenant, registry and version. */
export function sealVersionKey(kek: Buffer, tenantId: string, registryId: string, version: number, key: Buffer = randomBytes(32)): Buffer {
  return gcm(kek, key, Buffer.from(`log-key:${tenantId}:${registryId}:${version}`));
}
export function openVersionKey(kek: Buffer, tenantId: string, registryId: string, version: number, sealed: Buffer): Buffer {
  return ungcm(kek, sealed, Buffer.from(`log-key:${tenantId}:${registryId}:${version}`));
}

/** NDJSON plaintext of records, its sha256 (hex). */
export function plaintextOf(records: ReadonlyArray<Record<string, unknown>>): { plain: Buffer; sha256: string } {
  const plain = Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : ''), 'utf8');
  return { plain, sha256: createHash('sha256').update(plain).digest('hex') };
}

/** Encrypts a plaintext into a chunk object under a version key (a fresh data key). */
export function sealChunk(plain: Buffer, versionKey: Buffer, h: Omit<ChunkHeader, 'wrapped_key' | 'iv' | 'alg' | 'compression'>): Buffer {
  const dataKey = randomBytes(32);
  const wrapped = gcm(versionKey, dataKey, Buffer.from(`${h.chunk_id}:${h.key_version}`));
  const iv = randomBytes(12);
  const header: ChunkHeader = { ...h, wrapped_key: wrapped.toString('base64'), iv: iv.toString('base64'), alg: 'AES-256-GCM', compression: 'gzip' };
  const headerLine = Buffer.from(JSON.stringify(header) + '\n', 'utf8');
  const c = createCipheriv('aes-256-gcm', dataKey, iv);
  c.setAAD(headerLine);
  const ct = Buffer.concat([c.update(gzipSync(plain)), c.final()]);
  return Buffer.concat([Buffer.from(MAGIC), headerLine, c.getAuthTag(), ct]);
}

/** The header of a chunk object (not authenticated until the body is opened). */
export function chunkHeader(obj: Buffer): ChunkHeader {
  if (obj.subarray(0, MAGIC.length).toString('utf8') !== MAGIC) throw new Error('not a log chunk object');
  const nl = obj.indexOf(0x0a, MAGIC.length);
  return JSON.parse(obj.subarray(MAGIC.length, nl).toString('utf8')) as ChunkHeader;
}

/** Decrypts a chunk object with the key of the version its header names; throws unless it authenticates. */
export function openChunk(obj: Buffer, versionKey: (registryId: string, version: number) => Buffer): { header: ChunkHeader; plain: Buffer; sha256: string } {
  const header = chunkHeader(obj);
  const nl = obj.indexOf(0x0a, MAGIC.length);
  const headerLine = obj.subarray(MAGIC.length, nl + 1);
  const key = versionKey(header.key_registry_id, header.key_version);
  const dataKey = ungcm(key, Buffer.from(header.wrapped_key, 'base64'), Buffer.from(`${header.chunk_id}:${header.key_version}`));
  const body = obj.subarray(nl + 1);
  const d = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(header.iv, 'base64'));
  d.setAAD(headerLine);
  d.setAuthTag(body.subarray(0, 16));
  const plain = gunzipSync(Buffer.concat([d.update(body.subarray(16)), d.final()]));
  return { header, plain, sha256: createHash('sha256').update(plain).digest('hex') };
}
