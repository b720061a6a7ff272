import { pino, type Logger } from 'pino';
import { logIds } from './tracing/tracer.js';

export type { Logger };

/** Paths whose values never reach a log line: credentials, tokens, codes and key material. */
export const REDACT_PATHS = [
  'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization',
  'cookie', '*.cookie', 'headers.cookie', 'req.headers.cookie', 'set-cookie', '*["set-cookie"]',
  'client_secret', '*.client_secret', 'secret', '*.secret',
  'token', '*.token', 'access_token', '*.access_token', 'refresh_token', '*.refresh_token',
  'id_token', '*.id_token', 'subject_token', '*.subject_token', 'actor_token', '*.actor_token',
  'client_assertion', '*.client_assertion', 'code', '*.code', 'code_verifier', '*.code_verifier',
  'password', '*.password', 'key', '*.key', 'private_key', '*.private_key', 'privateKey', '*.privateKey',
  'admin_access_token', '*.admin_access_token', 'api_key', '*.api_key',
];

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...bindings },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // trace_id and span_id on every line of a traced request (nothing with tracing off).
    mixin: logIds,
  });
}
