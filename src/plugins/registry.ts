import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Sql } from '../sql.js';
import { outboxReadable } from '../cross-tenant/webhook-deliveries.js';
import { openSecret, sealSecret } from '../webhooks/secret-box.js';

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';
export interface CheckResult { status: HealthStatus; message: string }
/** What a health check may touch: the process's configuration and its connections. */
export interface CheckEnv { config: Config; sql: Sql; queueRedis: Redis }

export interface PluginSetting { name: string; secret: boolean; description: string }
export interface Plugin {
  id: string; name: string; version: string; capabilities: string[];
  /** Per-tenant settings an administrator may store; secret ones are sealed and never shown. */
  settings: PluginSetting[];
  check(env: CheckEnv): Promise<CheckResult>;
}

// Library and socket errors carry addresses and sometimes credentials from a URL: only their code is reported.
const reason = (err: unknown) => (err as { code?: string }).code ?? (err instanceof Error ? err.name : 'error');

const smtpMailer: Plugin = {
  id: 'smtp-mailer', name: 'SMTP mailer', version: '1.0.0', capabilities: ['email.send', 'login.code'],
  settings: [
    { name: 'from_name', secret: false, description: 'display name on login code mails' },
    { name: 'reply_to', secret: false, description: 'Reply-To address' },
    { name: 'relay_password', secret: true, description: 'password of a tenant SMTP relay' },
  ],
  // Connect and EHLO (nodemailer verify), with short timeouts so a dead server is reported, not waited on.
  async check({ config }) {
    const t = nodemailer.createTransport(config.smtpUrl, { connectionTimeout: 3000, greetingTimeout: 3000, socketTimeout: 3000 });
    try {
      await t.verify();
      return { status: 'healthy', message: 'SMTP server accepted the connection and EHLO' };
    } catch (err) {
      return { status: 'unhealthy', message: `SMTP connection failed (${reason(err)})` };
    } finally { t.close(); }
  },
};

const webhookSender: Plugin = {
  id: 'webhook-sender', name: 'Webhook sender', version: '1.0.0', capabilities: ['webhook.deliver', 'events.outbox'],
  settings: [{ name: 'user_agent_suffix', secret: false, description: 'appended to the User-Agent of deliveries' }],
  // Deliveries need the queue Redis and the outbox table.
  async check({ sql, queueRedis }) {
    try { await queueRedis.ping(); } catch (err) { return { status: 'unhealthy', message: `queue Redis unreachable (${reason(err)})` }; }
    try { await outboxReadable(sql); } catch (err) { return { status: 'unhealthy', message: `outbox unreadable (${reason(err)})` }; }
    return { status: 'healthy', message: 'queue Redis and outbox reachable' };
  },
};

const csvImporter: Plugin = {
  id: 'csv-importer', name: 'CSV user importer', version: '1.0.0', capabilities: ['users.import.csv', 'users.export.csv', 'field-mapping.preview'],
  settings: [{ name: 'default_country_code', secret: false, description: 'country code for national phone numbers' }],
  // Imports and exports stream through the temporary directory: a write probe there.
  async check() {
    const probe = path.join(os.tmpdir(), `svc-probe-${randomBytes(6).toString('hex')}`);
    try {
      await fs.writeFile(probe, 'probe');
      await fs.rm(probe);
      return { status: 'healthy', message: 'spool directory writable' };
    } catch (err) { return { status: 'unhealthy', message: `spool directory not writable (${reason(err)})` }; }
  },
};

const DEV_KEY = '6465762d6f6e6c792d6b65792d646f2d6e6f742d7573652d696e2d70726f6421';
const keyEncryption: Plugin = {
  id: 'key-encryption', name: 'Secret sealing (KEY_ENCRYPTION_KEY)', version: '1.0.0', capabilities: ['secrets.seal'],
  settings: [],
  async check({ config }) {
    try {
      if (openSecret(config.keyEncryptionKey, 'probe', sealSecret(config.keyEncryptionKey, 'probe', 'x')) !== 'x') throw new Error('mismatch');
    } catch (err) { return { status: 'unhealthy', message: `seal/open round trip failed (${reason(err)})` }; }
    if (config.keyEncryptionKey.toString('hex') === DEV_KEY) return { status: 'degraded', message: 'the development key is in use' };
    return { status: 'healthy', message: 'seal/open round trip succeeded' };
  },
};

const stdoutLog: Plugin = {
  id: 'stdout-log', name: 'Log output (stdout, JSON lines)', version: '1.0.0', capabilities: ['log.write'],
  settings: [],
  async check() {
    if (!process.stdout.writable) return { status: 'unhealthy', message: 'stdout is closed' };
    if (process.stdout.writableNeedDrain) return { status: 'degraded', message: 'stdout is applying back-pressure' };
    return { status: 'healthy', message: 'stdout writable' };
  },
};

/** Every pluggable integration of the service. */
export const PLUGINS: readonly Plugin[] = [smtpMailer, webhookSender, csvImporter, keyEncryption, stdoutLog];
export const pluginById = (id: string): Plugin | undefined => PLUGINS.find((p) => p.id === id);
export const MAILER_PLUGIN = 'smtp-mailer';
