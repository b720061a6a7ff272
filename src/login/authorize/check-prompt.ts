import { param, RedirectableError, type Query } from './types.js';

/**
 * The prompt values /authorize serves, in OpenID Connect Core's order; discovery advertises this list.
 * select_account: a browser holds at most one session, so there is one account to choose and the
 * request goes on as without it (docs/decisions.md).
 */
export const PROMPT_VALUES = ['none', 'login', 'consent', 'select_account'] as const;
const PROMPTS: ReadonlySet<string> = new Set(PROMPT_VALUES);

/** Step 6: prompt (OpenID Connect Core 3.1.2.1) and max_age; prompt=none stands alone. */
export function checkPrompt(q: Query): { prompt: string[]; maxAge?: number } {
  const bad = (m: string) => new RedirectableError('invalid_request', m);
  const raw = param(q, 'prompt', bad);
  const prompt = raw ? [...new Set(raw.split(' ').filter(Boolean))] : [];
  for (const p of prompt) if (!PROMPTS.has(p)) throw bad(`Unsupported prompt value ${JSON.stringify(p)}.`);
  if (prompt.includes('none') && prompt.length > 1) throw bad('prompt=none cannot be combined with other values.');
  const ma = param(q, 'max_age', bad);
  if (ma !== undefined && !/^\d{1,9}$/.test(ma)) throw bad('max_age must be a non-negative integer.');
  return { prompt, maxAge: ma === undefined ? undefined : Number(ma) };
}
