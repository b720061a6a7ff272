import { UnrecoverableError } from 'bullmq';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../src/config.js';
import type { SchemaTypes } from '../src/generated/types.js';
import { startConsumers } from '../src/jobs/consumers.js';
import { JobQueues } from '../src/jobs/queues.js';
import type { Logger } from '../src/log.js';
import { composeRaw, senderAddress } from '../src/mail/mime.js';
import { mailKey, unseal } from '../src/mail/seal.js';
import { approvalCodeMail, loginCodeMail } from '../src/mail/templates.js';

export interface RunningEmailWorker { close(): Promise<void> }

/** What the email job runs with: the SMTP transport, the key the codes are sealed under, the envelope sender. */
export interface EmailContext { config: Config; transport: Transporter; key: Buffer; sender?: string }

/** The `email` job (src/jobs/table.ts): renders the mail and sends it. */
export async function sendEmail(d: SchemaTypes['jobs.email'], { config, transport, key, sender }: EmailContext): Promise<string> {
  let code: string;
  try { code = unseal(key, d.sealed, d.to); } catch { throw new UnrecoverableError('sealed code cannot be opened'); }
  const mail = d.template === 'login_code' ? loginCodeMail(code, d.clientName, d.expiresInSeconds) : approvalCodeMail(code, d.requestId, d.expiresInSeconds);
  // Composed here when the headers are plain ASCII (always, for our templates and ASCII addresses).
  const composed = composeRaw({ from: config.mailFrom, to: d.to, mail });
  if (composed) await transport.sendMail({ envelope: { from: sender ?? senderAddress(config.mailFrom), to: [d.to] }, raw: composed.raw, messageId: composed.messageId });
  else await transport.sendMail({ from: config.mailFrom, to: d.to, subject: mail.subject, text: mail.text, html: mail.html });
  return 'sent';
}

/**
 * The email worker process: consumes the email queue and sends each message with nodemailer over
 * SMTP_URL. Started by the supervisor for role `email-worker` (and in-process by tests).
 */
export async function startEmailWorker(config: Config, log: Logger, opts: { schedules?: boolean } = {}): Promise<RunningEmailWorker> {
  // Pooled SMTP connections, one per concurrent job: a connection (and its EHLO/STARTTLS) per message
  // capped login throughput at a few dozen codes per second.
  const smtp = new URL(config.smtpUrl);
  smtp.searchParams.set('pool', 'true');
  smtp.searchParams.set('maxConnections', String(config.emailConcurrency));
  const transport = nodemailer.createTransport(smtp.toString(), { from: config.mailFrom });
  const jobs = new JobQueues(config);
  const consumers = await startConsumers('email-worker', { config, transport, key: mailKey(config.keyEncryptionKey), sender: senderAddress(config.mailFrom) }, { config, log, jobs, ...opts });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await consumers.close();
      transport.close();
      await jobs.close();
    })()),
  };
}
