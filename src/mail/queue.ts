import type { Context } from '@opentelemetry/api';
import { ServiceUnavailable } from '../errors.js';
import type { JobQueues } from '../jobs/queues.js';
import { mailKey, seal } from './seal.js';

/**
 * Sends one-time codes by email: each becomes an `email` job (src/jobs/table.ts) with the code sealed for
 * the email worker (see seal.ts) and `tenantId` naming whose it is (a tenant's purge removes its jobs).
 * The queue fails fast, so a request never waits on a queue outage: it answers 503.
 */
export class MailQueue {
  private readonly key: Buffer;

  /** `trace`: a sampled request's context, which its jobs carry (src/request-deps.ts). */
  constructor(private readonly jobs: JobQueues, keyEncryptionKey: Buffer, private readonly trace?: Context) {
    this.key = mailKey(keyEncryptionKey);
  }

  async sendLoginCode(tenantId: string, to: string, code: string, clientName: string, expiresInSeconds: number): Promise<void> {
    try {
      await this.jobs.add('email', { template: 'login_code', tenantId, to, sealed: seal(this.key, code, to), clientName, expiresInSeconds }, { name: 'login_code', trace: this.trace });
    } catch (err) {
      throw new ServiceUnavailable('The code could not be sent; retry shortly.', 1, err);
    }
  }

  async sendApprovalCode(tenantId: string, to: string, code: string, requestId: string, expiresInSeconds: number): Promise<void> {
    try {
      await this.jobs.add('email', { template: 'approval_code', tenantId, to, sealed: seal(this.key, code, to), requestId, expiresInSeconds }, { name: 'approval_code', trace: this.trace });
    } catch (err) {
      throw new ServiceUnavailable('The code could not be sent; retry shortly.', 1, err);
    }
  }
}
