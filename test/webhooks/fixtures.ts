import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../src/config.js';
import { recordEvent, type DomainEvent } from '../../src/events/outbox.js';
import { createSql, type Sql } from '../../src/sql.js';
import { newId } from '../../src/store/ids.js';
import { WebhookRepository, type WebhookFields, type WebhookRow } from '../../src/store/webhooks.js';
import { sealWebhookSecret } from '../../src/webhooks/secret-box.js';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { uniqueName } from '../helpers/env.js';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real receiver on loopback. `respond` decides each answer; requests are recorded in order. */
export async function startReceiver(respond: (req: Received, n: number) => { status?: number; body?: string; hang?: boolean; headers?: Record<string, string> } | void = () => {}): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const a = respond(r, received.length) ?? {};
      if (a.hang) return;
      res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...a.headers });
      res.end(a.body ?? 'ok');
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`, received,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** A tenant of its own for one test file. */
export async function createTenant(sql: Sql, label = 'wh'): Promise<string> {
  const id = uniqueName(label);
  await sql`insert into tenants (id, name) values (${id}, ${id})`;
  return id;
}

export function testSql(config: Config): Sql {
  return createSql(config, { max: 4 });
}

/** The webhooks repository of a tenant, on the pool. */
export function hooksOf(sql: Sql, tenantId: string): WebhookRepository {
  return new WebhookRepository(sql, tenantId);
}

export async function addWebhook(sql: Sql, config: Config, tenantId: string, input: Partial<WebhookFields> & { url: string; secret?: string }): Promise<WebhookRow> {
  const { secret = 'whsec_test_secret_0123456789', ...fields } = input;
  const id = newId('wh');
  return hooksOf(sql, tenantId).insert(id, { name: 'test hook', events: ['user.created'], ...fields }, sealWebhookSecret(config.keyEncryptionKey, tenantId, id, secret));
}

/** Commits one event the way features do: inside their own transaction. */
export async function emit(sql: Sql, e: DomainEvent): Promise<void> {
  await sql.begin((tx) => recordEvent(tx, e));
}

/**
 * A database of this test file's own, migrated. The relay serves every tenant of its database (as in
 * production), so files that run relays in parallel must not share one, or they would deliver each other's events.
 */
export async function isolatedDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const db = await tempDatabase();
  await migrate(db.sql);
  return { url: db.url, drop: db.drop };
}
