'use strict';
// Produce N messages with ali-ons (a pure-JavaScript RocketMQ 4.x client) and
// consume them back with its push consumer, through whatever NameServer is
// given. Prints one JSON document on stdout:
//   {"sent": [{msgId, queueId, queueOffset, tags, keys, body}], "received": [...], "errors": [...]}
// and exits 0 when every sent body was received, 1 otherwise.
//
// usage: node roundtrip.js NAMESRV_ADDR TOPIC GROUP COUNT [TIMEOUT_MS]

const { Producer, Consumer, Message } = require('ali-ons');

const [namesrv, topic, group, countText, timeoutText] = process.argv.slice(2);
if (!namesrv || !topic || !group || !countText) {
  console.error('usage: node roundtrip.js NAMESRV_ADDR TOPIC GROUP COUNT [TIMEOUT_MS]');
  process.exit(2);
}
const count = Number(countText);
const timeoutMs = Number(timeoutText || 40000);

// ali-ons asserts that an HTTP client is given even when the NameServer
// address is fixed; this one is never called because nameSrv is set.
const httpclient = {
  async request() {
    throw new Error('no HTTP lookup of NameServer addresses in this test');
  },
};

// Quiet logger: ali-ons logs every pull at info level.
const errors = [];
const logger = {
  info() {},
  debug() {},
  warn() {},
  error(...args) { errors.push(args.map(String).join(' ')); },
};

const common = {
  httpclient,
  nameSrv: [ namesrv ],
  logger,
  // Short intervals so the consumer finds its queues quickly.
  rebalanceInterval: 1000,
  heartbeatBrokerInterval: 5000,
  persistConsumerOffsetInterval: 1000,
};

function tagFor(i) { return i % 2 === 0 ? 'TagEven' : 'TagOdd'; }
function keysFor(i) { return [ `key-${i}`, `batch-${Math.floor(i / 10)}` ]; }

async function main() {
  const sent = [];
  const received = new Map();

  const producer = new Producer(Object.assign({ producerGroup: `${group}_P` }, common));
  producer.on('error', err => errors.push(`producer: ${err.message}`));
  await producer.ready();
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, tagFor(i), `interop body ${i} ✓`);
    msg.keys = keysFor(i);
    const result = await producer.send(msg);
    sent.push({
      msgId: result.msgId,
      sendStatus: result.sendStatus,
      queueId: Number(result.messageQueue.queueId),
      queueOffset: result.queueOffset,
      tags: tagFor(i),
      keys: keysFor(i).join(' '),
      body: `interop body ${i} ✓`,
    });
  }

  const consumer = new Consumer(Object.assign({
    consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
  }, common));
  consumer.on('error', err => errors.push(`consumer: ${err.message}`));

  let finish;
  const allReceived = new Promise(resolve => { finish = resolve; });
  consumer.subscribe(topic, '*', async msg => {
    const body = msg.body ? msg.body.toString('utf8') : '';
    received.set(body, {
      msgId: msg.msgId,
      queueId: msg.queueId,
      queueOffset: msg.queueOffset,
      tags: msg.tags,
      keys: msg.keys,
      body,
      reconsumeTimes: msg.reconsumeTimes,
    });
    if (received.size >= count) {
      finish();
    }
  });
  await consumer.ready();

  let timer;
  const timedOut = new Promise(resolve => { timer = setTimeout(resolve, timeoutMs); });
  await Promise.race([ allReceived, timedOut ]);
  clearTimeout(timer);

  const report = { sent, received: Array.from(received.values()), errors };
  process.stdout.write(JSON.stringify(report) + '\n');
  try {
    await consumer.close();
    await producer.close();
  } catch (err) {
    errors.push(`close: ${err.message}`);
  }
  return received.size >= count ? 0 : 1;
}

main().then(
  code => process.exit(code),
  err => {
    process.stdout.write(JSON.stringify({ fatal: `${err.name}: ${err.message}`, code: err.code, errors }) + '\n');
    process.exit(1);
  }
);
