import { createHash } from 'node:crypto';
import { normalizeEmail } from '../users/email.js';

/**
 * Redis keys of the login feature (the client's keyPrefix adds config.redisPrefix). Secrets never
 * appear in key names: codes, session ids and addresses are hashed first.
 */
export const loginKeys = {
  otp: (emailHash: string) => `otp:${emailHash}`,
  rateAddress: (emailHash: string) => `rl:otp:addr:${emailHash}`,
  rateIp: (ip: string) => `rl:otp:ip:${ip}`,
  interaction: (id: string) => `ia:${id}`,
  session: (sidHash: string) => `sess:${sidHash}`,
  authCode: (codeHash: string) => `ac:${codeHash}`,
  authCodeUsed: (codeHash: string) => `ac:${codeHash}:used`,
  authCodeIssued: (codeHash: string) => `ac:${codeHash}:issued`,
  authCodeReplayed: (codeHash: string) => `ac:${codeHash}:replayed`,
  consent: (tenant: string, userId: string, clientId: string) => `consent:${tenant}:${userId}:${clientId}`,
};

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('base64url');
}

export function emailHash(email: string): string {
  return sha256(`email:${normalizeEmail(email)}`);
}
