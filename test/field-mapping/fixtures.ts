import type { Mapping } from '../../src/field-mapping/model.js';

/** A user-import mapping as an operator would write it: emails normalized, names trimmed, phones to E.164, a verified flag. */
export function userMapping(): Mapping {
  return {
    catalog: {
      entries: [
        { id: 'email', namespace: 'user', path: 'email', valueType: 'email', cardinality: 'one', classification: 'pii', required: true },
        { id: 'name', namespace: 'user', path: 'name', valueType: 'string', cardinality: 'one', classification: 'pii' },
        { id: 'phone', namespace: 'user', path: 'metadata.phone', valueType: 'phone', cardinality: 'one', classification: 'pii' },
        { id: 'email_verified', namespace: 'user', path: 'email_verified', valueType: 'boolean', cardinality: 'one', classification: 'internal' },
        { id: 'team', namespace: 'user', path: 'metadata.team', valueType: 'string', cardinality: 'one', classification: 'internal', allowedValues: ['red', 'blue', 'green'] },
      ],
    },
    columnToPath: { 'E-Mail': 'src.email', First: 'src.first', Last: 'src.last', Phone: 'src.phone', Verified: 'src.verified', Team: 'src.team' },
    edges: [
      { id: 'e_email', sourceRef: 'src.email', targetRef: 'email' },
      { id: 'e_first', sourceRef: 'src.first', targetRef: 'name' },
      { id: 'e_last', sourceRef: 'src.last', targetRef: 'name' },
      { id: 'e_phone', sourceRef: 'src.phone', targetRef: 'phone' },
      { id: 'e_verified', sourceRef: 'src.verified', targetRef: 'email_verified' },
      { id: 'e_team', sourceRef: 'src.team', targetRef: 'team' },
    ],
    transforms: [
      { id: 't_email', inputEdgeIds: ['e_email'], operation: 'normalize', parameters: { kind: 'email' }, outputTargetRef: 'email' },
      { id: 't_name', inputEdgeIds: ['e_first', 'e_last'], operation: 'concat', parameters: { separator: ' ' }, outputTargetRef: 'name' },
      { id: 't_phone', inputEdgeIds: ['e_phone'], operation: 'normalize', parameters: { kind: 'phone', defaultCountryCode: '44' }, outputTargetRef: 'phone' },
      { id: 't_verified', inputEdgeIds: ['e_verified'], operation: 'text_to_boolean', outputTargetRef: 'email_verified' },
      { id: 't_team', inputEdgeIds: ['e_team'], operation: 'case', parameters: { to: 'lower' }, outputTargetRef: 'team' },
    ],
    validationRules: [
      { id: 'r_name', kind: 'required', targetRef: 'name', severity: 'warning' },
      { id: 'r_team', kind: 'enum', targetRef: 'team', severity: 'warning', parameters: { values: ['red', 'blue'] } },
    ],
    requiredColumns: ['E-Mail'],
  };
}

/**
 * A 100-row CSV: rows 0-59 good, 60-79 partial (no name: a warning; or team green: allowed by the
 * catalog but warned by the rule), 80-99 failed (bad email, bad phone, bad boolean, missing email).
 */
export function hundredRowCsv(): string {
  const lines = ['E-Mail,First,Last,Phone,Verified,Team,Shoe size'];
  for (let i = 0; i < 100; i++) {
    if (i < 60) lines.push(`" User${i}@Example.COM ",Ada${i},Lovelace,020 7946 ${String(1000 + i)},yes,Red,42`);
    else if (i < 70) lines.push(`user${i}@example.com,,,+1 415 555 ${String(2000 + i)},no,blue,41`);
    else if (i < 80) lines.push(`user${i}@example.com,Bo,Diddley,,true,GREEN,40`);
    else if (i < 85) lines.push(`not-an-email-${i},Al,Bad,,yes,red,40`);
    else if (i < 90) lines.push(`user${i}@example.com,Al,Phone,12,yes,red,40`);
    else if (i < 95) lines.push(`user${i}@example.com,Al,Bool,,maybe,red,40`);
    else lines.push(`,Al,Missing,,yes,red,40`);
  }
  return lines.join('\n') + '\n';
}
