import type { StatementHook } from '../sql-statements.js';
import { endWithError, hasActiveSpan, SpanKind, tracer, type Context } from './tracer.js';

/** `SELECT clients`: the statement's verb and first table, from the template's text (never its values). */
function nameOf(text: string): string {
  const verb = /^\s*\(?\s*(select|insert|update|delete|with)\b/i.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
  const table = /\b(?:from|into|update)\s+("?[a-z_][\w.]*"?)/i.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

/** The statement text with `$n` where each value goes: what the span shows (values never). */
function textOf(strings: TemplateStringsArray): string {
  return strings.reduce((acc, s, i) => (i === 0 ? s : `${acc}$${i}${s}`), '').replace(/\s+/g, ' ').trim().slice(0, 2000);
}

function statementSpan(strings: TemplateStringsArray, parent: Context | undefined): (e: unknown) => void {
  const text = textOf(strings);
  const span = tracer().startSpan(nameOf(text), { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.query.text': text } }, parent);
  return (e) => { if (e === undefined) span.end(); else endWithError(span, e); };
}

/**
 * A client span per statement (hooked in only with tracing on), and only within a trace (see
 * traceRedis): a statement outside one runs unrecorded. Worker processes, whose context follows awaits.
 */
export const traceStatement: StatementHook = (strings) => (hasActiveSpan() ? statementSpan(strings, undefined) : undefined);

/** The same span for every statement of a client view made for one sampled request (src/request-deps.ts). */
export function statementsUnder(parent: Context): StatementHook {
  return (strings) => statementSpan(strings, parent);
}
