import { UnrecoverableError, Worker, type Job } from 'bullmq';
import nodemailer from 'nodemailer';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import { EMAIL_QUEUE, emailQueuePrefix, type EmailJob } from '../src/mail/queue.js';
import { mailKey, unseal } from '../src/mail/seal.js';
import { createRedis } from '../src/store/redis.js';
import { approvalCodeMail, loginCodeMail } from '../src/mail/templates.js';

export interface RunningEmailWorker { close(): Promise<void> }

/**
 * The email worker process: a BullMQ consumer that renders each job and sends it with nodemailer over
 * SMTP_URL. Started by the supervisor for role `email-worker` (and in-process by tests).
 */
export async function startEmailWorker(config: Config, log: Logger): Promise<RunningEmailWorker> {
  // Pooled SMTP connections, one per concurrent job: a connection (and its EHLO/STARTTLS) per message
  // capped login throughput at a few dozen codes per second.
  const smtp = new URL(config.smtpUrl);
  smtp.searchParams.set('pool', 'true');
  smtp.searchParams.set('maxConnections', String(config.emailConcurrency));
  const transport = nodemailer.createTransport(smtp.toString(), { from: config.mailFrom });
  const key = mailKey(config.keyEncryptionKey);
  // Workers retry Redis forever (BullMQ requires maxRetriesPerRequest null on consumer connections).
  const connection = createRedis(config, 'worker');
  const worker = new Worker<EmailJob>(EMAIL_QUEUE, async (job: Job<EmailJob>) => {
    const d = job.data;
    if ((d?.template !== 'login_code' && d?.template !== 'approval_code') || typeof d.to !== 'string') throw new UnrecoverableError('unknown email job');
    let code: string;
    try { code = unseal(key, d.sealed, d.to); } catch { throw new UnrecoverableError('sealed code cannot be opened'); }
    const mail = d.template === 'login_code' ? loginCodeMail(code, d.clientName, d.expiresInSeconds) : approvalCodeMail(code, d.requestId, d.expiresInSeconds);
    await transport.sendMail({ from: config.mailFrom, to: d.to, subject: mail.subject, text: mail.text, html: mail.html });
    return 'sent';
  }, {
    connection, prefix: emailQueuePrefix(config), concurrency: config.emailConcurrency,
    // A one-time code is useful for minutes: a crashed worker's active jobs are found stalled and run
    // again within about 15 s (BullMQ's defaults, 30 s + 30 s, let a code arrive a minute late).
    lockDuration: 10_000, stalledInterval: 5_000, maxStalledCount: 5,
  });
  worker.on('error', (err) => log.warn({ err: err.message }, 'email worker error'));
  // Never log the address or the code: the job id is enough to correlate.
  worker.on('failed', (job, err) => log.warn({ job: job?.id, attempts: job?.attemptsMade, err: err.message }, 'email job failed'));
  await worker.waitUntilReady();
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await worker.close();
      transport.close();
      await connection.quit().catch(() => connection.disconnect());
    })()),
  };
}
