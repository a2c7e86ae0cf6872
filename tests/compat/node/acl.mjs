#!/usr/bin/env node
// One authorized (or refused) step with the official Node.js client and `sessionCredentials`.
//
//   node acl.mjs --endpoint HOST:PORT --topic T [--group G] --access-key AK --secret-key SK --role send|receive
//
// send: a Producer sends one message. receive: a SimpleConsumer receives (for up to 15 s) and acks
// one message. Prints ONE JSON line on stdout: {"ok": true, ...} or {"ok": false, "code": <the
// RocketMQ status code of the refusal, if any>, "error": "..."}; client logs go to stderr.

import { parseArgs, format } from 'node:util';
import rocketmq from 'rocketmq-client-nodejs';

const { Producer, SimpleConsumer } = rocketmq;
const log = (...a) => process.stderr.write(`[acl] ${format(...a)}\n`);
const { values: args } = parseArgs({
  options: {
    endpoint: { type: 'string' }, topic: { type: 'string' }, group: { type: 'string', default: '' },
    'access-key': { type: 'string' }, 'secret-key': { type: 'string' }, role: { type: 'string' },
  },
  strict: true,
});
const logger = { info: log, warn: log, error: log, debug: undefined, close() {} };
const common = {
  endpoints: args.endpoint, namespace: '', requestTimeout: 3000, logger,
  sessionCredentials: { accessKey: args['access-key'], accessSecret: args['secret-key'] },
};
const result = { ok: false, role: args.role, code: null, error: null };
const watchdog = setTimeout(() => finish('watchdog: still running after 45 s'), 45000);

function finish(error) {
  clearTimeout(watchdog);
  if (error) result.error = String(error);
  process.stdout.write(JSON.stringify(result) + '\n');
  setImmediate(() => process.exit(0));
}

let client;
try {
  if (args.role === 'send') {
    client = new Producer({ ...common, topic: args.topic });
    await client.startup();
    const receipt = await client.send({ topic: args.topic, tag: 'a', body: Buffer.from('acl') });
    result.message_id = receipt.messageId;
  } else {
    client = new SimpleConsumer({ ...common, consumerGroup: args.group, subscriptions: new Map([[ args.topic, '*' ]]),
      awaitDuration: 2000 });
    await client.startup();
    const deadline = Date.now() + 15000;
    let got = [];
    while (!got.length && Date.now() < deadline) got = await client.receive(4, 15000);
    for (const m of got) await client.ack(m);
    result.received = got.length;
  }
  result.ok = true;
} catch (e) {
  let cause = e;
  while (cause && cause.code === undefined && cause.cause) cause = cause.cause;
  result.code = cause?.code ?? null;
  result.error = `${e.name}: ${e.message}`;
}
try {
  await client?.shutdown();
} catch (e) {
  log('shutdown failed (ignored): %s', e);
}
finish();
