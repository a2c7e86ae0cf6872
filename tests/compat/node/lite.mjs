#!/usr/bin/env node
// Lite topics with the official Node.js client's LitePushConsumer (rocketmq-client-nodejs 1.0.8).
//
//   node lite.mjs --endpoint 127.0.0.1:PORT --topic PARENT --group G [--timeout S]
//
// PARENT is a LITE topic. A LitePushConsumer subscribes node-a and node-b; the producer sends
// ROUNDS messages to each of node-a, node-b and node-c, interleaved; everything consumed is recorded
// until the expected count plus a quiet time. Then unsubscribeLite(node-b), two more to node-b and
// one to node-a, recorded the same way. Prints ONE JSON line on stdout (the Python test checks it):
// {"ok", "phase", "error", "sent": {lite: [ids]}, "received": [{id, lite_topic, topic, attempt, ms}],
//  "first_send_ms", "after_unsubscribe": {"sent_b": [ids], "sent_a": id}}. Client logs go to stderr.

import { parseArgs, format } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import rocketmq from 'rocketmq-client-nodejs';

const { Producer, LitePushConsumerImpl, ConsumeResult } = rocketmq;

const T0 = Date.now();
const now = () => Date.now() - T0;
const log = (...a) => process.stderr.write(`[lite +${(now() / 1000).toFixed(3)}s] ${format(...a)}\n`);

const { values: args } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    topic: { type: 'string' },
    group: { type: 'string' },
    timeout: { type: 'string', default: '75' },
  },
  strict: true,
});
for (const k of [ 'endpoint', 'topic', 'group' ]) {
  if (!args[k]) {
    process.stderr.write(`usage: node lite.mjs --endpoint HOST:PORT --topic PARENT --group GROUP (missing --${k})\n`);
    process.exit(64);
  }
}
const { endpoint, topic, group } = args;
const ROUNDS = 3;
const WAIT_MS = 20000; // for the expected messages
const QUIET_MS = 2500; // then nothing more may come
const STEP_TIMEOUT_MS = 15000;

let phase = 'init';
const clientLog = (level) => (...a) => log(`client ${level} [${phase}]`, format(...a));
const logger = { info: clientLog('INFO'), warn: clientLog('WARN'), error: clientLog('ERROR'), debug: undefined, close() {} };

const result = { ok: false, phase: null, error: null, sent: {}, received: [], first_send_ms: null, after_unsubscribe: null };

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([ promise, timeout ]).finally(() => clearTimeout(timer));
}

async function until(predicate, ms) {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await sleep(50);
}

function finish(code) {
  process.stdout.write(JSON.stringify(result) + '\n');
  setImmediate(() => process.exit(code));
}

setTimeout(() => {
  result.phase = phase;
  result.error = `global watchdog: still running after ${args.timeout} s`;
  finish(2);
}, Number(args.timeout) * 1000);
process.on('unhandledRejection', (e) => log('unhandled rejection (ignored):', e?.message ?? e));

const clients = [];

async function send(producer, lite) {
  const receipt = await withTimeout(producer.send({ topic, liteTopic: lite, body: Buffer.from(`${lite}:${now()}`) }),
    STEP_TIMEOUT_MS, `send to ${lite}`);
  return receipt.messageId;
}

async function main() {
  const common = { endpoints: endpoint, namespace: '', requestTimeout: 3000, logger };

  phase = 'producer.startup';
  const producer = new Producer({ ...common, topic });
  clients.push(producer);
  await withTimeout(producer.startup(), STEP_TIMEOUT_MS, 'producer.startup()');

  phase = 'consumer.startup';
  const consumer = new LitePushConsumerImpl({
    ...common,
    consumerGroup: group,
    bindTopic: topic,
    messageListener: {
      consume(view) {
        result.received.push({ id: view.messageId, lite_topic: view.liteTopic ?? null, topic: view.topic,
          attempt: view.deliveryAttempt ?? null, ms: now() });
        return ConsumeResult.SUCCESS;
      },
    },
  });
  clients.push(consumer);
  await withTimeout(consumer.startup(), STEP_TIMEOUT_MS, 'consumer.startup()');

  phase = 'subscribeLite';
  for (const lite of [ 'node-a', 'node-b' ]) {
    await withTimeout(consumer.subscribeLite(lite), STEP_TIMEOUT_MS, `subscribeLite(${lite})`);
  }

  phase = 'send';
  result.first_send_ms = now();
  for (let i = 0; i < ROUNDS; i++) {
    for (const lite of [ 'node-a', 'node-b', 'node-c' ]) {
      (result.sent[lite] ??= []).push(await send(producer, lite));
    }
  }
  phase = 'receive';
  await until(() => result.received.length >= 2 * ROUNDS, WAIT_MS);
  await sleep(QUIET_MS);

  phase = 'unsubscribeLite';
  await withTimeout(consumer.unsubscribeLite('node-b'), STEP_TIMEOUT_MS, 'unsubscribeLite(node-b)');
  const sentB = [ await send(producer, 'node-b'), await send(producer, 'node-b') ];
  const sentA = await send(producer, 'node-a');
  result.after_unsubscribe = { sent_b: sentB, sent_a: sentA };
  phase = 'receive-after-unsubscribe';
  await until(() => result.received.some((r) => r.id === sentA), WAIT_MS);
  await sleep(QUIET_MS);
}

let code = 0;
try {
  await main();
  result.ok = true;
  phase = 'done';
} catch (e) {
  code = 1;
  result.error = `${e?.name ?? 'Error'}: ${e?.message ?? e}${e?.code !== undefined ? ` (code=${e.code})` : ''}`;
  log('FAILED in phase %s: %s', phase, result.error);
}
result.phase = phase;
for (const c of clients.reverse()) {
  try {
    await withTimeout(c.shutdown(), 5000, 'shutdown');
  } catch (e) {
    log('shutdown failed (ignored): %s', e?.message ?? e);
  }
}
finish(code);
