import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseRedisTarget } from '../../src/store/redis-url.js';

// Issue 20: REDIS_URL / QUEUE_REDIS_URL name one Redis or a Redis Cluster; REDIS_CLUSTER_NODES is the short form.
t.test('a cluster address names its startup nodes, credentials and TLS', async (t) => {
  t.same(parseRedisTarget('redis+cluster://127.0.0.1:7000,127.0.0.1:7001'), { kind: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }], username: undefined, password: undefined, tls: false });
  t.same(parseRedisTarget('rediss+cluster://svc:p%40ss@a.example:6380/'), { kind: 'cluster', nodes: [{ host: 'a.example', port: 6380 }], username: 'svc', password: 'p@ss', tls: true });
  t.same(parseRedisTarget('redis://127.0.0.1:6379/2'), { kind: 'single', url: 'redis://127.0.0.1:6379/2' });
  t.throws(() => parseRedisTarget('redis+cluster://127.0.0.1'), /host:port/);
  t.throws(() => parseRedisTarget('http://x'), /must use redis:/);
});

t.test('configuration: REDIS_CLUSTER_NODES, a cluster QUEUE_REDIS_URL, and a bad address refused at start', async (t) => {
  const c = loadConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7000' });
  t.equal(c.redisUrl, 'redis+cluster://10.0.0.1:7000,10.0.0.2:7000');
  t.equal(c.queueRedisUrl, c.redisUrl, 'the queues default to the same cluster');
  t.equal(loadConfig({ NODE_ENV: 'test', QUEUE_REDIS_URL: 'redis+cluster://q:1,q:2' }).queueRedisUrl, 'redis+cluster://q:1,q:2');
  const err = t.throws(() => loadConfig({ NODE_ENV: 'test', REDIS_URL: 'redis+cluster://nohost' })) as ConfigError;
  t.match(err.message, /REDIS_URL cluster node "nohost" is not host:port/);
});
