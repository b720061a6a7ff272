// One thread of the RS256 signing-limit measurement: signs a token-sized payload until the deadline.
import { createPrivateKey, sign } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';

const { pem, until, payload } = workerData as { pem: string; until: number; payload: string };
const key = createPrivateKey(pem);
const data = Buffer.from(payload);
let n = 0;
// Wait for the common start so all threads overlap fully.
while (Date.now() < until - (workerData.seconds as number) * 1000) { /* spin until start */ }
while (Date.now() < until) {
  for (let i = 0; i < 20; i++) sign('sha256', data, key);
  n += 20;
}
parentPort!.postMessage(n);
