import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';
import { declareEvents } from '../../src/events/declare.js';
import { EVENT_NAMES, EXTENSION_EVENT_NAMES, UNEMITTED_EVENT_NAMES } from '../../src/events/names.js';
import type { TxSql } from '../../src/sql.js';

// Events are declared like audits (issue 30): an admin route declares the events its mutations emit in
// `adminRoute({ events })` and emits them through `mutate`'s `emit`; a domain service declares them once
// with `const x = declareEvents([...])` and writes them with `x.emit*`. This test reads the source tree
// and holds every declaration against what the code emits and against the spec's event list.

// The Events part of the interface spec (interface-spec.md), copied as written: the spec is not part of
// the repository.
const SPEC_EVENTS = `
| User | \`user.created\` | user created |
| User | \`user.updated\` | user updated |
| User | \`user.deleted\` | user deleted |
| User | \`user.suspended\` | user suspended |
| User | \`user.unsuspended\` | user suspension lifted |
| Authentication | \`auth.login\` | login success |
| Authentication | \`auth.login_failed\` | login failed |
| Authentication | \`auth.logout\` | logout |
| Authentication | \`auth.password_changed\` | password changed |
| Authentication | \`auth.mfa_enabled\` | MFA enabled |
| Security | \`security.alert\` | security alert |
| Security | \`security.suspicious_activity\` | suspicious activity |
| Role and permission | \`role.assigned\` | role assigned |
| Role and permission | \`role.unassigned\` | role unassigned |
| Role and permission | \`policy.created\` | policy created |
| Role and permission | \`policy.updated\` | policy updated |
`.trim().split('\n').map((l) => /`([a-z_.]+)`/.exec(l)![1]!);

const KNOWN = new Set<string>([...EVENT_NAMES, ...EXTENSION_EVENT_NAMES]);
const root = fileURLToPath(new URL('../../../', import.meta.url));
// The mechanism itself: src/events writes the outbox, src/admin/route.ts declares each route's events.
const MECHANISM = [path.join('src', 'events') + path.sep, path.join('src', 'admin', 'route.ts')];

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return rel === path.join('src', 'generated') ? [] : sources(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

/** Event names written as string literals anywhere inside `node`. */
function literals(node: ts.Node): string[] {
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && KNOWN.has(n.text)) out.push(n.text);
    n.forEachChild(visit);
  };
  visit(node);
  return out;
}

interface Declaration { owner: string; where: string; declared: Set<string>; emitted: Set<string> }
interface Scan { declarations: Map<string, Declaration>; problems: string[] }

/** Every declaration in `files` (an admin route's `events`, a `declareEvents` const) and what is emitted through each. */
function scan(files: Array<{ file: string; text: string }>): Scan {
  const declarations = new Map<string, Declaration>();
  const problems: string[] = [];
  const emitted: Array<{ owner: string; where: string; events: string[] }> = [];
  for (const { file, text } of files) {
    const mechanism = MECHANISM.some((m) => file === m || file.startsWith(m));
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node) => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const visit = (n: ts.Node, route: string | undefined): void => {
      if (ts.isImportDeclaration(n) && !mechanism && /events\/outbox\.js$/.test((n.moduleSpecifier as ts.StringLiteral).text)) {
        const names = n.importClause?.namedBindings && ts.isNamedImports(n.importClause.namedBindings) ? n.importClause.namedBindings.elements.map((e) => e.name.text) : [];
        for (const name of names.filter((x) => /^recordEvent/.test(x))) problems.push(`${at(n)}: imports ${name}: an event written by hand, declared nowhere`);
      }
      if (ts.isCallExpression(n)) {
        const callee = n.expression;
        if (ts.isIdentifier(callee) && callee.text === 'adminRoute' && n.arguments[1] && ts.isObjectLiteralExpression(n.arguments[1])) {
          const owner = `adminRoute@${at(n)}`;
          const prop = n.arguments[1].properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === 'events');
          declarations.set(owner, { owner, where: at(n), declared: new Set(prop ? literals(prop.initializer) : []), emitted: new Set() });
          n.forEachChild((c) => visit(c, owner));
          return;
        }
        if (ts.isIdentifier(callee) && callee.text === 'declareEvents' && !mechanism) {
          const decl = n.parent;
          if (!ts.isVariableDeclaration(decl) || !ts.isIdentifier(decl.name)) problems.push(`${at(n)}: declareEvents must initialise a named const`);
          else if (declarations.has(decl.name.text)) problems.push(`${at(n)}: a second declaration named ${decl.name.text} (names are how emissions are matched: make it unique)`);
          else declarations.set(decl.name.text, { owner: decl.name.text, where: at(n), declared: new Set(literals(n.arguments[0] ?? n)), emitted: new Set() });
        }
        if (ts.isIdentifier(callee) && callee.text === 'emit' && !mechanism) {
          if (!route) problems.push(`${at(n)}: emit() outside an admin route's mutate`);
          else emitted.push({ owner: route, where: at(n), events: literals(n.arguments[0] ?? n) });
        }
        if (ts.isPropertyAccessExpression(callee) && /^emit(All|ReturningId)?$/.test(callee.name.text) && ts.isIdentifier(callee.expression) && !mechanism) {
          emitted.push({ owner: callee.expression.text, where: at(n), events: n.arguments.flatMap((a) => literals(a)) });
        }
      }
      n.forEachChild((c) => visit(c, route));
    };
    visit(sf, undefined);
  }
  for (const e of emitted) {
    const d = declarations.get(e.owner);
    if (!d) { problems.push(`${e.where}: emits through ${e.owner}, which is no declaration`); continue; }
    if (!e.events.length) problems.push(`${e.where}: emits without naming its event (write the name at the call)`);
    for (const ev of e.events) {
      if (d.declared.has(ev)) d.emitted.add(ev);
      else problems.push(`${e.where}: emits ${ev}, not declared by ${d.owner} (${d.where})`);
    }
  }
  for (const d of declarations.values()) {
    for (const ev of d.declared) if (!d.emitted.has(ev)) problems.push(`${d.where}: ${d.owner} declares ${ev}, which nothing emits`);
  }
  return { declarations, problems };
}

const tree = [...sources('src'), ...sources('workers')].map((file) => ({ file, text: fs.readFileSync(path.join(root, file), 'utf8') }));

t.test("svc's event names are the spec's, in its order", async (t) => {
  t.same([...EVENT_NAMES], SPEC_EVENTS);
});

t.test('every event emitted is declared by its emitter, and every declared event is emitted', async (t) => {
  const { declarations, problems } = scan(tree);
  t.same(problems, []);
  t.ok([...declarations.values()].filter((d) => d.declared.size).length >= 15, 'the declarations were found');
});

t.test('the declared events are the spec\'s events (but the two svc cannot emit) and the documented extensions', async (t) => {
  const declared = new Set([...scan(tree).declarations.values()].flatMap((d) => [...d.declared]));
  const unemitted = new Set<string>(UNEMITTED_EVENT_NAMES);
  t.same([...KNOWN].filter((e) => !unemitted.has(e) && !declared.has(e)), [], 'every event of the spec and the extensions is declared');
  t.same([...declared].filter((e) => unemitted.has(e)), [], 'no event svc documents as never emitted is declared');
});

t.test('the scan fails on a broken declaration', async (t) => {
  const route = (events: string, emits: string) => ({
    file: 'src/admin/x.ts',
    text: `adminRoute(deps, { method: 'POST', path: '/x', audit: a, events: [${events}], handler: async ({ mutate }) => mutate(async (_tx, _s, emit) => { ${emits} }) });`,
  });
  t.same(scan([route("'user.created'", "emit('user.created', {});")]).problems, []);
  t.match(scan([route("'user.created'", "emit('user.deleted', {});")]).problems, [/emits user\.deleted, not declared/, /declares user\.created, which nothing emits/]);
  t.match(scan([route("'user.created', 'user.deleted'", "emit('user.created', {});")]).problems, [/declares user\.deleted, which nothing emits/]);
  t.match(scan([{ file: 'src/x.ts', text: "const e = declareEvents(['auth.login']);\nexport const f = (tx) => e.emit(tx, 't', 'auth.logout', {});" }]).problems,
    [/emits auth\.logout, not declared by e/, /declares auth\.login, which nothing emits/]);
  t.match(scan([{ file: 'src/x.ts', text: "import { recordEvent } from './events/outbox.js';" }]).problems, [/imports recordEvent: an event written by hand/]);
  t.match(scan([{ file: 'src/x.ts', text: "export const f = (tx) => other.emit(tx, 't', 'auth.login', {});" }]).problems, [/emits through other, which is no declaration/]);
});

t.test('an event outside the declaration is refused at run time too', async (t) => {
  const e = declareEvents(['user.created']);
  const tx = (() => { throw new Error('no statement may run'); }) as unknown as TxSql;
  await t.rejects(e.emit(tx, 'tenant', 'user.deleted' as 'user.created', {}), new TypeError('a service declaring [user.created] emits "user.deleted" but does not declare it'));
});
