import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';
import { createSql } from '../../src/sql.js';

// Tenancy is a security boundary: a statement that touches a table holding tenant data either names its
// tenant (`tenant_id = ${…}`, `= any(${…})`, an insert that writes tenant_id) or lives in the one named place
// for queries that cross tenants on purpose, src/cross-tenant/, where each says why. This file reads
// every SQL statement of src/ and workers/ (tagged templates, parsed with the TypeScript compiler) and fails on
// an unscoped one anywhere else, the way two-tenants-coverage fails on a repository without a two-tenant test.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PLACE = 'src/cross-tenant/';

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'generated' ? [] : files(path.join(dir, e.name))) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
}

interface Statement { file: string; line: number; text: string }

/** Every tagged template of a file that is a whole SQL statement (not a fragment), with `${}` for each value. */
function statements(file: string): Statement[] {
  const source = fs.readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const out: Statement[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isTaggedTemplateExpression(n)) {
      const tpl = n.template;
      const text = ts.isNoSubstitutionTemplateLiteral(tpl) ? tpl.text : [tpl.head.text, ...tpl.templateSpans.map((s) => '${}' + s.literal.text)].join('');
      if (/^\s*\(?\s*(select|insert|update|delete|with)\b/i.test(text)) {
        out.push({ file: path.relative(root, file), line: sf.getLineAndCharacterOfPosition(n.getStart()).line + 1, text: text.replace(/\s+/g, ' ') });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The tenant tables a statement reads or writes. */
function tablesOf(text: string, tenantTables: string[]): string[] {
  return tenantTables.filter((tb) => new RegExp(`\\b(from|join|into|update)\\s+${tb}\\b`, 'i').test(text));
}

/**
 * Whether a statement names its tenant: a tenant_id compared with a value, an insert that writes tenant_id
 * (by column list, or a row object: tenant_id is NOT NULL everywhere, checked below), or a correlated
 * subquery scoped by its outer query's tenant (`tenant_id = w.tenant_id` with `w` not defined here).
 */
function scoped(text: string): boolean {
  if (/tenant_id\s*(=\s*(any\s*\(\s*)?\$\{\}|in\s*\(?\s*\$\{\})/i.test(text)) return true;
  if (/^\s*insert\s+into\s+\w+\s*(\$\{\}|\([^)]*\btenant_id\b)/i.test(text)) return true;
  for (const m of text.matchAll(/\btenant_id\s*=\s*(\w+)\.tenant_id\b/gi)) {
    const alias = m[1]!;
    if (!new RegExp(`\\b(from|join|update)\\s+\\w+(\\s+as)?\\s+${alias}\\b`, 'i').test(text)) return true;
  }
  return false;
}

const sql = createSql({ databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test', databasePoolSize: 1 });
t.teardown(() => sql.end({ timeout: 2 }));
const columns = await sql<{ table_name: string; is_nullable: string }[]>`
  select table_name, is_nullable from information_schema.columns where table_schema = 'public' and column_name = 'tenant_id'`;
const tenantTables = columns.map((c) => c.table_name).sort();
const all = [...files(path.join(root, 'src')), ...files(path.join(root, 'workers'))].flatMap(statements);

t.test('the scope rule reads statements as meant', async (t) => {
  t.ok(scoped('select * from clients where tenant_id = ${} and client_id = ${}'));
  t.ok(scoped('delete from sessions where tenant_id = any(${}) returning id'));
  t.ok(scoped('insert into users ${}'));
  t.ok(scoped('insert into consents (id, tenant_id, user_id) values (${}, ${}, ${})'));
  t.ok(scoped('select sum(total) from webhook_stats where tenant_id = w.tenant_id and webhook_id = w.id'), 'correlated to an outer query');
  t.notOk(scoped('select * from clients where client_id = ${}'));
  t.notOk(scoped('select tenant_id, id from users where email is not null'), 'reading tenant_id is not naming a tenant');
  t.notOk(scoped('select * from log_chunks c join log_deliveries d on d.tenant_id = c.tenant_id where c.id = ${}'), 'a join on tenant_id scopes nothing');
  t.notOk(scoped('insert into clients (client_id, name) values (${}, ${})'));
});

t.test('every tenant table requires its tenant, so a row written without one fails', async (t) => {
  t.ok(tenantTables.length >= 40, `${tenantTables.length} tenant tables`);
  t.same(columns.filter((c) => c.is_nullable !== 'NO').map((c) => c.table_name), [], 'tables whose tenant_id may be null');
});

t.test('statements that cross tenants live in src/cross-tenant/ and nowhere else', async (t) => {
  const unscoped = all.filter((s) => tablesOf(s.text, tenantTables).length && !scoped(s.text));
  t.ok(all.length > 300, `${all.length} statements read`);
  t.same(unscoped.filter((s) => !s.file.startsWith(PLACE)).map((s) => `${s.file}:${s.line} ${s.text.slice(0, 120)}`), [],
    'statements on tenant tables that name no tenant, outside src/cross-tenant/');
  t.ok(unscoped.some((s) => s.file.startsWith(PLACE)), 'the cross-tenant place holds the statements that cross tenants');
});

t.test('each cross-tenant query says why it may cross tenants', async (t) => {
  for (const f of files(path.join(root, PLACE))) {
    const sf = ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
    const rel = path.relative(root, f);
    const documented = (n: ts.Node) => ts.getJSDocCommentsAndTags(n).length > 0;
    for (const st of sf.statements) {
      const exported = ts.canHaveModifiers(st) && ts.getModifiers(st)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (!exported) continue;
      if (ts.isFunctionDeclaration(st)) t.ok(documented(st), `${rel}: ${st.name?.text} says why`);
      if (ts.isClassDeclaration(st)) {
        for (const m of st.members) if (ts.isMethodDeclaration(m) && m.name) t.ok(documented(m), `${rel}: ${st.name?.text}.${m.name.getText(sf)} says why`);
      }
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) {
          if (d.initializer && ts.isObjectLiteralExpression(d.initializer)) {
            for (const p of d.initializer.properties) t.ok(documented(p), `${rel}: ${d.name.getText(sf)}.${p.name?.getText(sf)} says why`);
          } else t.ok(documented(st), `${rel}: ${d.name.getText(sf)} says why`);
        }
      }
    }
  }
});
