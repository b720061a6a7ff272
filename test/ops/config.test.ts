import t from 'tap';
import { ConfigError, keyMaterialWriteRefusal, loadConfig } from '../../src/config.js';

t.test('configuration is validated once with every problem listed', async (t) => {
  const err = t.throws(() => loadConfig({ PORT: 'abc', WORKERS: '0', TOKEN_SIGNING_ALG: 'HS256', REDIS_URL: 'http://x' })) as ConfigError;
  t.type(err, ConfigError);
  t.equal(err.problems.length, 4);
  t.match(err.message, /PORT must be an integer/);
  t.match(err.message, /TOKEN_SIGNING_ALG/);
});

t.test('production refuses the development key and a plain-http issuer', async (t) => {
  const err = t.throws(() => loadConfig({ NODE_ENV: 'production' })) as ConfigError;
  t.match(err.message, /KEY_ENCRYPTION_KEY/);
  t.match(err.message, /ISSUER must be https/);
  const ok = loadConfig({ NODE_ENV: 'production', ISSUER: 'https://id.example', KEY_ENCRYPTION_KEY: 'ab'.repeat(32) });
  t.equal(ok.issuer, 'https://id.example');
  t.ok(Object.isFrozen(ok));
});

t.test('the development key may seal new key material only when development or test was asked for (issue 29 item 13)', async (t) => {
  t.match(keyMaterialWriteRefusal(loadConfig({})), /KEY_ENCRYPTION_KEY is not set/, 'NODE_ENV and the key both defaulted: refused');
  t.equal(keyMaterialWriteRefusal(loadConfig({ NODE_ENV: 'development' })), undefined);
  t.equal(keyMaterialWriteRefusal(loadConfig({ NODE_ENV: 'test' })), undefined);
  t.equal(keyMaterialWriteRefusal(loadConfig({ KEY_ENCRYPTION_KEY: 'ab'.repeat(32) })), undefined, 'a key given is always enough');
  // The development key given explicitly in production is as good as published.
  const err = t.throws(() => loadConfig({ NODE_ENV: 'production', ISSUER: 'https://id.example', KEY_ENCRYPTION_KEY: '6465762D6F6E6C792D6B65792D646F2D6E6F742D7573652D696E2D70726F6421' })) as ConfigError;
  t.match(err.message, /KEY_ENCRYPTION_KEY must not be the development key in production/);
});

t.test('defaults serve on 127.0.0.1:8080', async (t) => {
  const c = loadConfig({});
  t.equal(c.host, '127.0.0.1');
  t.equal(c.port, 8080);
  t.equal(c.issuer, 'http://127.0.0.1:8080');
});

t.test('DATABASE_READ_URL is optional and must be a postgres URL', async (t) => {
  t.equal(loadConfig({}).databaseReadUrl, undefined);
  t.equal(loadConfig({ DATABASE_READ_URL: 'postgres://r@10.0.0.2:5432/svc' }).databaseReadUrl, 'postgres://r@10.0.0.2:5432/svc');
  const err = t.throws(() => loadConfig({ DATABASE_READ_URL: 'redis://x' })) as ConfigError;
  t.match(err.problems.join('\n'), /DATABASE_READ_URL must use postgres: or postgresql:/);
});
