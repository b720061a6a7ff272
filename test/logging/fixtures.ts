import type { ChildProcess } from 'node:child_process';
import { forkReady } from '../helpers/processes.js';
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { openChunk, openVersionKey } from '../../src/logging/chunk-crypto.js';
import { startLogWorker, type RunningLogWorker } from '../../workers/log-worker.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { startTestServer } from '../helpers/server.js';

const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/log-worker.js');

/** A server and log workers (in this process, or a child that can be SIGKILLed) over temp archive directories. */
export async function logEnv(extra: Record<string, string> = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-logs-'));
  const ENV = {
    LOG_ARCHIVE_DIR: path.join(root, 'archive'), LOG_SECRETS_DIR: path.join(root, 'secrets'), LOG_FLUSH_MS: '50', LOG_ARCHIVE_INTERVAL_MS: '300',
    LOG_DESTINATION_HEALTH_INTERVAL_MS: '500', LOG_CREDENTIAL_OVERLAP_MS: '2000', USER_JOB_LOCK_MS: '2000', ...extra,
  };
  // A database of its own: the log worker archives every tenant's records in its database (one run at a
  // time across processes), so a second test file's worker would take this file's records into its directory.
  const db = await tempDatabase();
  await migrate(db.sql);
  const srv = await startTestServer({ ...ENV, DATABASE_URL: db.url });
  const children = new Set<ChildProcess>();
  const workers = new Set<RunningLogWorker>();
  t.teardown(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const w of workers) await w.close();
    await srv.close();
    await db.drop();
    fs.rmSync(root, { recursive: true, force: true });
  });
  return {
    srv, root, sql: srv.deps.sql, ENV,
    async worker(): Promise<RunningLogWorker> {
      const w = await startLogWorker(srv.config, createLogger('silent'));
      workers.add(w);
      return { close: async () => { workers.delete(w); await w.close(); } };
    },
    child(env: Record<string, string> = {}): Promise<ChildProcess> {
      const c = srv.config;
      return forkReady(workerFile, { ...process.env, ...ENV, ...env, NODE_ENV: 'test', LOG_LEVEL: 'silent', REDIS_PREFIX: c.redisPrefix, DATABASE_URL: c.databaseUrl, REDIS_URL: c.redisUrl, QUEUE_REDIS_URL: c.queueRedisUrl }, children);
    },
    kill(child: ChildProcess): Promise<void> {
      return new Promise((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
    },
    /** Decrypts a chunk object with the registry version key read from the database, as an operator with KEY_ENCRYPTION_KEY could. */
    async decrypt(tenantId: string, obj: Buffer): Promise<{ header: any; records: any[]; sha256: string }> {
      const keys = new Map<string, Buffer>();
      const hdr = JSON.parse(obj.subarray(8, obj.indexOf(0x0a, 8)).toString('utf8'));
      const [v] = await srv.deps.sql<Array<{ key_enc: Buffer }>>`select key_enc from log_key_versions where tenant_id = ${tenantId} and registry_id = ${hdr.key_registry_id} and version = ${hdr.key_version}`;
      keys.set(`${hdr.key_registry_id}:${hdr.key_version}`, openVersionKey(srv.config.keyEncryptionKey, tenantId, hdr.key_registry_id, hdr.key_version, v!.key_enc));
      const o = openChunk(obj, (r, ver) => keys.get(`${r}:${ver}`)!);
      return { header: o.header, sha256: o.sha256, records: o.plain.toString('utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
    },
  };
}

/** A request a sink receiver got: what it answered (`answered`) and when (`at`, epoch ms). */
export interface SinkRequest { key: string; body: Buffer; versions: number[]; verified: number[]; headers: import('node:http').IncomingHttpHeaders; answered: number; at: number }

/** An HTTP receiver of chunks that verifies `X-Svc-Signature` against the secrets it knows (by version); it answers `status.code` to signed requests. */
export async function sinkReceiver(): Promise<{ url: string; secrets: Map<number, string>; received: SinkRequest[]; status: { code: number }; close(): Promise<void> }> {
  const secrets = new Map<number, string>();
  const received: SinkRequest[] = [];
  const status = { code: 200 };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const ts = String(req.headers['x-svc-timestamp']);
      const sigs = String(req.headers['x-svc-signature'] ?? '').split(',').map((s) => /^v(\d+)=([0-9a-f]{64})$/.exec(s)).filter((m): m is RegExpExecArray => m !== null);
      const verified = sigs.filter((m) => {
        const secret = secrets.get(Number(m[1]));
        if (!secret) return false;
        const want = createHmac('sha256', secret).update(`${ts}.`).update(body).digest();
        return timingSafeEqual(want, Buffer.from(m[2]!, 'hex'));
      }).map((m) => Number(m[1]));
      const key = String(req.headers['x-svc-object-key']);
      res.statusCode = verified.length ? status.code : 401;
      if (key !== '.health-probe') received.push({ key, body, versions: sigs.map((m) => Number(m[1])), verified, headers: req.headers, answered: res.statusCode, at: Date.now() });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as import('node:net').AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/ingest`, secrets, received, status, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}
