import { bare } from './bare.js';
import { clientCredentials } from './client-credentials.js';
import { clientCredentialsDpop } from './client-credentials-dpop.js';
import { exchangeOnly } from './exchange-dpop.js';
import { introspection, introspectionDpop, introspectionJwt, introspectionOnly } from './introspection.js';
import { introspectionMix } from './introspection-mix.js';
import { login } from './login.js';
import { tokenExchange } from './token-exchange.js';
import type { Scenario } from './types.js';

export const SCENARIOS: Record<string, Scenario> = {
  'token-exchange': tokenExchange,
  introspection,
  'introspection-mix': introspectionMix,
  login,
  'client-credentials': clientCredentials,
};

/** Single-category variants measured by `perf -- cpu` (issue 22), not ladders of their own. */
export const VARIANTS: Record<string, Scenario> = {
  'introspection-hit': introspectionOnly('hit'),
  'introspection-miss': introspectionOnly('miss'),
  'client-credentials-dpop': clientCredentialsDpop,
  'introspection-hit-jwt': introspectionJwt(),
  'introspection-hit-dpop': introspectionDpop('hit'),
  'exchange-bearer': exchangeOnly(false),
  'exchange-dpop': exchangeOnly(true),
  'introspection-miss-dpop': introspectionDpop('miss'),
  bare,
};
