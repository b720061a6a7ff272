import t from 'tap';
import { createLifecycle } from '../../src/lifecycle.js';

t.test('starts in registration order, closes in reverse, once', async (t) => {
  const events: string[] = [];
  const lc = createLifecycle();
  const res = (name: string) => ({ start: () => { events.push(`start ${name}`); }, close: async () => { events.push(`close ${name}`); } });
  lc.add('sql', { close: () => { events.push('close sql'); } });
  lc.add('redis', res('redis'));
  lc.add('queue', res('queue'));
  t.same(lc.names(), ['sql', 'redis', 'queue']);
  await lc.start();
  await Promise.all([lc.close(), lc.close()]);
  t.same(events, ['start redis', 'start queue', 'close queue', 'close redis', 'close sql']);
  t.same(lc.names(), []);
});

t.test('a resource added after start is started; after close, closed at once', async (t) => {
  const events: string[] = [];
  const lc = createLifecycle();
  await lc.start();
  lc.add('late', { start: () => { events.push('start late'); }, close: () => { events.push('close late'); } });
  await new Promise((r) => setImmediate(r));
  t.same(events, ['start late']);
  await lc.close();
  lc.add('after', { start: () => { events.push('start after'); }, close: () => { events.push('close after'); } });
  await new Promise((r) => setImmediate(r));
  t.same(events, ['start late', 'close late', 'close after'], 'never started, closed so it cannot leak');
});

t.test('one resource failing to close does not keep the others open', async (t) => {
  const closed: string[] = [];
  const lc = createLifecycle();
  lc.add('a', { close: () => { closed.push('a'); } });
  lc.add('b', { close: () => { throw new Error('boom'); } });
  lc.add('c', { close: async () => { closed.push('c'); } });
  await lc.close();
  t.same(closed, ['c', 'a']);
});
