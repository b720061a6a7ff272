import { ValidationError, type Details } from '../errors.js';
import { validators, type ValidateFn } from '../generated/index.js';

export type { ValidateFn } from '../generated/index.js';
export type AjvError = NonNullable<ValidateFn['errors']>[number];

/** Looks up a compiled validator; a missing id is a programming error caught at start-up. */
export function validatorFor(id: string): ValidateFn {
  const v = validators[id];
  if (!v) throw new TypeError(`no compiled schema with $id "${id}" (add it under schemas/ and rebuild)`);
  return v;
}

/** Validates in place (defaults applied); throws ValidationError with details keyed by field. */
export function validate(fn: ValidateFn, data: unknown): void {
  if (fn(data)) return;
  throw new ValidationError(errorDetails(fn.errors ?? []));
}

/** Turns Ajv errors into `{ "field.path": ["message", ...] }`. */
export function errorDetails(errors: AjvError[]): Details {
  const out: Details = {};
  for (const e of errors) {
    let field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    let msg = e.message ?? 'is invalid';
    if (e.keyword === 'required') { field = join(field, e.params.missingProperty); msg = 'is required'; }
    else if (e.keyword === 'additionalProperties') { field = join(field, e.params.additionalProperty); msg = 'is not an allowed field'; }
    else if (e.keyword === 'enum') msg = `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
    const key = field || '_';
    (out[key] ??= []).includes(msg) || out[key]!.push(msg);
  }
  return out;
}

function join(a: string, b: string): string { return a ? `${a}.${b}` : b; }
