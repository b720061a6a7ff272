import type { Logger } from './log.js';

/** Something a process holds open: a connection, a queue, a timer. `start` is optional; `close` releases it. */
export interface Resource {
  start?(): void | Promise<void>;
  close(): void | Promise<void>;
}

/**
 * Owner of everything an HTTP process holds open besides its server: connections, queues, timers and
 * worker threads. Whoever creates such a thing registers it here (route modules through deps.lifecycle),
 * so shutdown is one call that leaves no handle behind.
 */
export interface Lifecycle {
  /** Registers a resource; started at once if the lifecycle already started, closed at once if it already closed. */
  add<R extends Resource>(name: string, resource: R): R;
  /** Starts every registered resource, in registration order. */
  start(): Promise<void>;
  /** Closes every resource in reverse registration order (what was created last may use what came before). Idempotent. */
  close(): Promise<void>;
  /** Names of the registered resources still open, in registration order (for logs and tests). */
  names(): string[];
}

export function createLifecycle(log?: Logger): Lifecycle {
  const entries: Array<{ name: string; resource: Resource; started: boolean }> = [];
  let state: 'new' | 'starting' | 'started' | 'closed' = 'new';
  let closing: Promise<void> | undefined;

  const startOne = async (e: { name: string; resource: Resource; started: boolean }) => {
    if (e.started) return;
    e.started = true;
    await e.resource.start?.();
  };
  const closeOne = async (e: { name: string; resource: Resource }) => {
    const started = Date.now();
    try {
      await e.resource.close();
      log?.debug({ resource: e.name, ms: Date.now() - started }, 'closed');
    } catch (err) {
      // One resource failing to close must not keep the others open.
      log?.warn({ resource: e.name, err: (err as Error).message }, 'resource did not close cleanly');
    }
  };

  return {
    add(name, resource) {
      const e = { name, resource, started: false };
      if (state === 'closed') { void closeOne(e); return resource; }
      entries.push(e);
      if (state === 'started') {
        void startOne(e).catch((err) => log?.error({ resource: name, err: (err as Error).message }, 'resource failed to start'));
      }
      return resource;
    },
    async start() {
      if (state !== 'new') return;
      state = 'starting';
      for (let i = 0; i < entries.length; i++) await startOne(entries[i]!);
      if (state === 'starting') state = 'started';
    },
    close() {
      return (closing ??= (async () => {
        state = 'closed';
        while (entries.length) await closeOne(entries.pop()!);
      })());
    },
    names: () => entries.map((e) => e.name),
  };
}
