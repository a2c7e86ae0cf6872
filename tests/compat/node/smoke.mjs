#!/usr/bin/env node
// Smoke test of a rockmq broker with the official RocketMQ 5 Node.js client (rocketmq-client-nodejs).
//
//   node smoke.mjs --endpoint 127.0.0.1:PORT --topic T --group G
//   (or ROCKMQ_ENDPOINT / ROCKMQ_TOPIC / ROCKMQ_GROUP)
//
// Steps:
//   1. Producer (topic declared up front, so startup waits for the Telemetry settings reply) and
//      SimpleConsumer (tag filter "TagA") start up.
//   2. Send 3 NORMAL messages tagged TagA with keys and a user property, plus 1 tagged TagB
//      that the filter must exclude.
//   3. Receive (retrying for up to 20 s), check bodies/tags/keys/properties/ids, ack each.
//   4. Send 1 DELAY message (delivery timestamp = now + 2 s) and receive until it arrives:
//      it must not arrive before 1.5 s and must arrive within 20 s.
//   5. Print ONE JSON line on stdout: {"ok": true|false, ...}. Exit 0 on success, 1 on a failed
//      check, 2 on the global watchdog. Client logs go to stderr (NODE_DEBUG=rocketmq-client-nodejs*
//      adds the client's debug output).

import { parseArgs, format } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import rocketmq from 'rocketmq-client-nodejs';

const { Producer, SimpleConsumer } = rocketmq;

const T0 = Date.now();
const elapsed = () => ((Date.now() - T0) / 1000).toFixed(3);
const log = (...args) => process.stderr.write(`[smoke +${elapsed()}s] ${format(...args)}\n`);

// ---- arguments ---------------------------------------------------------------------------------
const { values: args } = parseArgs({
  options: {
    endpoint: { type: 'string', default: process.env.ROCKMQ_ENDPOINT },
    topic: { type: 'string', default: process.env.ROCKMQ_TOPIC },
    group: { type: 'string', default: process.env.ROCKMQ_GROUP },
    timeout: { type: 'string', default: process.env.ROCKMQ_SMOKE_TIMEOUT ?? '75' }, // global watchdog, s
    // TLS (the client's own option); the CA comes through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH.
    ssl: { type: 'boolean', default: false },
    // Credentials (a broker run with --auth): the client's own sessionCredentials.
    'access-key': { type: 'string' },
    'secret-key': { type: 'string' },
  },
  strict: true,
});
for (const k of [ 'endpoint', 'topic', 'group' ]) {
  if (!args[k]) {
    process.stderr.write(`usage: node smoke.mjs --endpoint HOST:PORT --topic TOPIC --group GROUP (missing --${k})\n`);
    process.exit(64);
  }
}
const { endpoint, topic, group } = args;

const RECEIVE_WINDOW_MS = 20000; // how long we keep retrying receive for expected messages
const LONG_POLL_MS = 5000; // SimpleConsumer awaitDuration (long_polling_timeout sent to the broker)
const REQUEST_TIMEOUT_MS = 3000;
const INVISIBLE_MS = 15000;
const DELAY_MS = 2000;
const EARLIEST_DELAY_OK_MS = 1500; // a delayed message seen before this is a failure
const STARTUP_TIMEOUT_MS = 15000;
const SHUTDOWN_TIMEOUT_MS = 5000;

// ---- client logger: everything to stderr, with the phase we are in -----------------------------
let phase = 'init';
const clientLog = (level) => (...a) => log(`client ${level} [${phase}]`, format(...a));
const logger = {
  info: clientLog('INFO'),
  warn: clientLog('WARN'),
  error: clientLog('ERROR'),
  debug: process.env.ROCKMQ_SMOKE_DEBUG ? clientLog('DEBUG') : undefined,
  close() {},
};

const result = {
  ok: false,
  endpoint, topic, group,
  phase: null,
  error: null,
  normal: { sent: [], received: [], acked: 0, filtered_out_seen: false },
  delay: null,
  elapsed_s: null,
};

class CheckFailed extends Error {}
function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([ promise, timeout ]).finally(() => clearTimeout(timer));
}

function describeError(e) {
  if (!e) return String(e);
  let s = e instanceof CheckFailed ? e.message : `${e.name ?? 'Error'}: ${e.message ?? e}`;
  if (e.code !== undefined) s += ` (code=${e.code})`;
  if (e.details) s += ` details=${e.details}`;
  let cause = e.cause;
  while (cause) {
    s += ` <- caused by ${cause.name ?? 'Error'}: ${cause.message ?? cause}`;
    if (cause.code !== undefined) s += ` (code=${cause.code})`;
    cause = cause.cause;
  }
  return s;
}

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  result.elapsed_s = Number(elapsed());
  process.stdout.write(JSON.stringify(result) + '\n');
  if (!result.ok) {
    process.stderr.write(`SMOKE FAILED in phase "${result.phase}": ${result.error}\n`);
  }
  // grpc-js channels and client timers may keep the loop alive; exit explicitly.
  process.exitCode = code;
  setImmediate(() => process.exit(code));
}

// Global watchdog: whatever hangs (e.g. startup waiting for a settings reply), we still exit.
const watchdog = setTimeout(() => {
  result.ok = false;
  result.phase = phase;
  result.error = `global watchdog: smoke test still running after ${args.timeout} s (stuck in phase "${phase}")`;
  finish(2);
}, Number(args.timeout) * 1000);

process.on('unhandledRejection', (e) => log('unhandled rejection (ignored):', describeError(e)));

const bodyOf = (m) => Buffer.from(m.body).toString('utf8');

function viewSummary(m) {
  return {
    message_id: m.messageId,
    body: bodyOf(m),
    tag: m.tag ?? null,
    keys: m.keys,
    properties: Object.fromEntries(m.properties ?? []),
    delivery_attempt: m.deliveryAttempt ?? null,
    corrupted: Boolean(m.corrupted),
    offset: m.offset ?? null,
  };
}

async function receiveOnce(consumer, what) {
  // receive() long-polls for LONG_POLL_MS; bound it anyway (grpc deadline is request timeout + poll).
  return withTimeout(consumer.receive(16, INVISIBLE_MS), LONG_POLL_MS + REQUEST_TIMEOUT_MS + 5000,
    `consumer.receive (${what})`);
}

// ---- the test ----------------------------------------------------------------------------------
const clients = [];

async function main() {
  const common = { endpoints: endpoint, namespace: '', requestTimeout: REQUEST_TIMEOUT_MS, logger, sslEnabled: args.ssl };
  if (args['access-key'] !== undefined) {
    common.sessionCredentials = { accessKey: args['access-key'], accessSecret: args['secret-key'] ?? '' };
  }

  phase = 'producer.startup';
  const producer = new Producer({ ...common, topic });
  clients.push([ 'producer', producer ]);
  await withTimeout(producer.startup(), STARTUP_TIMEOUT_MS,
    'producer.startup() (QueryRoute, then waits for the Telemetry settings reply)');
  log('producer started, clientId=%s, maxBodySize=%d', producer.clientId, producer.publishingSettings.maxBodySizeBytes);
  check(producer.publishingSettings.maxBodySizeBytes > 0,
    `producer settings reply has publishing.max_body_size=${producer.publishingSettings.maxBodySizeBytes}`);

  phase = 'consumer.startup';
  const consumer = new SimpleConsumer({
    ...common,
    consumerGroup: group,
    subscriptions: new Map([[ topic, 'TagA' ]]),
    awaitDuration: LONG_POLL_MS,
  });
  clients.push([ 'consumer', consumer ]);
  await withTimeout(consumer.startup(), STARTUP_TIMEOUT_MS,
    'consumer.startup() (QueryRoute, then waits for the Telemetry settings reply)');
  log('consumer started, clientId=%s', consumer.clientId);

  // -- normal messages --
  phase = 'send.normal';
  const expected = new Map(); // body -> {keys, messageId}
  for (let i = 0; i < 3; i++) {
    const body = `rockmq-node-smoke-${topic}-${i}`;
    const keys = [ `key-${i}`, `smoke-${i}` ];
    const receipt = await withTimeout(producer.send({
      topic,
      tag: 'TagA',
      keys,
      properties: new Map([[ 'seq', String(i) ]]),
      body: Buffer.from(body),
    }), 10000, `producer.send(normal #${i})`);
    check(receipt && receipt.messageId, `send receipt #${i} has no messageId: ${JSON.stringify(receipt)}`);
    expected.set(body, { keys, messageId: receipt.messageId, seq: String(i) });
    result.normal.sent.push({ message_id: receipt.messageId, offset: receipt.offset, body });
    log('sent normal #%d messageId=%s offset=%s', i, receipt.messageId, receipt.offset);
  }
  const filteredBody = `rockmq-node-smoke-${topic}-tagB`;
  const filteredReceipt = await withTimeout(producer.send({
    topic, tag: 'TagB', keys: [ 'key-b' ], body: Buffer.from(filteredBody),
  }), 10000, 'producer.send(TagB message)');
  log('sent TagB (must be filtered out) messageId=%s', filteredReceipt.messageId);

  phase = 'receive.normal';
  const got = new Map();
  const deadline = Date.now() + RECEIVE_WINDOW_MS;
  let polls = 0;
  while (got.size < expected.size && Date.now() < deadline) {
    polls++;
    const batch = await receiveOnce(consumer, `normal, poll #${polls}`);
    log('receive poll #%d -> %d message(s)', polls, batch.length);
    for (const m of batch) {
      const s = viewSummary(m);
      const body = s.body;
      if (body === filteredBody) {
        result.normal.filtered_out_seen = true;
        throw new CheckFailed(`tag filter "TagA" delivered the TagB message: ${JSON.stringify(s)}`);
      }
      const exp = expected.get(body);
      check(exp, `received an unexpected message: ${JSON.stringify(s)}`);
      check(!got.has(body), `message delivered twice before ack: ${JSON.stringify(s)}`);
      check(!s.corrupted, `client flagged the message as corrupted (body_digest mismatch; Node expects uppercase hex MD5/SHA1): ${JSON.stringify(s)}`);
      check(s.message_id === exp.messageId, `message_id ${s.message_id} != send receipt ${exp.messageId}`);
      check(s.tag === 'TagA', `tag ${s.tag} != TagA`);
      check(JSON.stringify([ ...s.keys ].sort()) === JSON.stringify([ ...exp.keys ].sort()),
        `keys ${JSON.stringify(s.keys)} != ${JSON.stringify(exp.keys)}`);
      check(s.properties.seq === exp.seq, `user property seq=${s.properties.seq} != ${exp.seq}`);
      check(s.delivery_attempt >= 1, `delivery_attempt ${s.delivery_attempt} < 1`);
      got.set(body, m);
      result.normal.received.push(s);
    }
  }
  check(got.size === expected.size,
    `received ${got.size}/${expected.size} messages within ${RECEIVE_WINDOW_MS} ms (${polls} polls); missing: ` +
    JSON.stringify([ ...expected.keys() ].filter(b => !got.has(b))));

  phase = 'ack.normal';
  for (const m of got.values()) {
    await withTimeout(consumer.ack(m), 10000, `consumer.ack(${m.messageId})`);
    result.normal.acked++;
  }
  log('acked %d message(s)', result.normal.acked);

  // -- delayed message --
  phase = 'send.delay';
  const delayBody = `rockmq-node-smoke-${topic}-delayed`;
  const sentAt = Date.now();
  const deliveryTimestamp = new Date(sentAt + DELAY_MS);
  const delayReceipt = await withTimeout(producer.send({
    topic, tag: 'TagA', keys: [ 'key-delay' ], deliveryTimestamp, body: Buffer.from(delayBody),
  }), 10000, 'producer.send(delayed)');
  log('sent delayed messageId=%s deliveryTimestamp=%s recallHandle=%s', delayReceipt.messageId,
    deliveryTimestamp.toISOString(), delayReceipt.recallHandle);
  result.delay = {
    message_id: delayReceipt.messageId,
    delay_ms: DELAY_MS,
    has_recall_handle: Boolean(delayReceipt.recallHandle),
    empty_polls_before: 0,
    received_after_ms: null,
    delivery_timestamp_ms: null,
  };

  phase = 'receive.delay';
  const delayDeadline = sentAt + RECEIVE_WINDOW_MS;
  let delayed = null;
  while (!delayed && Date.now() < delayDeadline) {
    const batch = await receiveOnce(consumer, 'delayed');
    const now = Date.now();
    if (batch.length === 0) {
      result.delay.empty_polls_before++;
      log('delayed poll returned nothing at +%d ms', now - sentAt);
      continue;
    }
    for (const m of batch) {
      const s = viewSummary(m);
      check(s.body === delayBody, `unexpected message while waiting for the delayed one ` +
        `(redelivery of an acked message, or filter leak?): ${JSON.stringify(s)}`);
      const after = now - sentAt;
      result.delay.received_after_ms = after;
      result.delay.delivery_timestamp_ms = m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : null;
      log('delayed message received %d ms after send', after);
      check(after >= EARLIEST_DELAY_OK_MS,
        `delayed message (delivery in ${DELAY_MS} ms) was delivered too early: ${after} ms after send`);
      check(!s.corrupted, `delayed message flagged as corrupted: ${JSON.stringify(s)}`);
      check(s.message_id === delayReceipt.messageId, `delayed message_id ${s.message_id} != ${delayReceipt.messageId}`);
      delayed = m;
    }
  }
  check(delayed, `delayed message not received within ${RECEIVE_WINDOW_MS} ms of sending ` +
    `(${result.delay.empty_polls_before} empty polls)`);
  phase = 'ack.delay';
  await withTimeout(consumer.ack(delayed), 10000, 'consumer.ack(delayed)');
  result.delay.acked = true;
}

async function shutdownAll() {
  for (const [ name, client ] of clients.reverse()) {
    try {
      await withTimeout(client.shutdown(), SHUTDOWN_TIMEOUT_MS, `${name}.shutdown()`);
    } catch (e) {
      log('shutdown of %s failed (ignored): %s', name, describeError(e));
    }
  }
}

let code = 0;
try {
  await main();
  result.ok = true;
  phase = 'done';
} catch (e) {
  code = 1;
  result.ok = false;
  result.error = describeError(e);
  log('FAILED in phase %s: %s', phase, result.error);
  if (!(e instanceof CheckFailed) && e?.stack) log(e.stack);
}
result.phase = phase;
const phaseBeforeShutdown = phase;
phase = 'shutdown';
await shutdownAll();
phase = phaseBeforeShutdown;
clearTimeout(watchdog);
finish(code);
