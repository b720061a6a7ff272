import { clientCredentials } from './client-credentials.js';
import { introspection } from './introspection.js';
import { login } from './login.js';
import { tokenExchange } from './token-exchange.js';
import type { Scenario } from './types.js';

export const SCENARIOS: Record<string, Scenario> = {
  'token-exchange': tokenExchange,
  introspection,
  login,
  'client-credentials': clientCredentials,
};
