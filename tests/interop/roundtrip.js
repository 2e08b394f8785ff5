'use strict';
// Produce messages with ali-ons (a pure-JavaScript RocketMQ 4.x client) and
// consume them back with its push consumer, through whatever NameServer is
// given. Prints one JSON document on stdout:
//   {"sent": [{msgId, queueId, queueOffset, tags, keys, body}], "received": [...], "errors": [...]}
// and exits 0 when the consumer received `--expect` distinct bodies, 1 otherwise.
//
// usage: node roundtrip.js --namesrv HOST:PORT --topic T --group G
//            [--produce N] [--expect M] [--subscribe EXPR] [--timeout MS] [--retry-every K]
// Message i has tag TagEven or TagOdd and keys "key-i batch-<i/10>". With
// --retry-every K, the consumer asks for a redelivery (ACTION_RETRY) of every
// message whose number is a multiple of K the first time it sees it.

const { Producer, Consumer, Message } = require('ali-ons');

function parseArgs(argv) {
  const opts = { produce: '0', expect: '0', subscribe: '*', timeout: '40000', 'retry-every': '0' };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  for (const required of [ 'namesrv', 'topic', 'group' ]) {
    if (!opts[required]) throw new Error(`--${required} is required`);
  }
  return opts;
}

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (err) {
  console.error(`${err.message}\nusage: node roundtrip.js --namesrv HOST:PORT --topic T --group G ` +
    '[--produce N] [--expect M] [--subscribe EXPR] [--timeout MS] [--retry-every K]');
  process.exit(2);
}
const { namesrv, topic, group, subscribe } = opts;
const produceCount = Number(opts.produce);
const count = Number(opts.expect);
const timeoutMs = Number(opts.timeout);
const retryEvery = Number(opts['retry-every']);

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
  pollNameServerInteval: 1000,  // sic: ali-ons spells it so; picks up %RETRY% routes quickly
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
  for (let i = 0; i < produceCount; i++) {
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

  let consumer = null;
  if (count > 0) {
    consumer = new Consumer(Object.assign({
      consumerGroup: group,
      consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    }, common));
    consumer.on('error', err => errors.push(`consumer: ${err.message}`));

    let finish;
    const allReceived = new Promise(resolve => { finish = resolve; });
    const retried = new Set();
    consumer.subscribe(topic, subscribe, async msg => {
      const body = msg.body ? msg.body.toString('utf8') : '';
      const number = Number(body.split(' ')[2]);
      if (retryEvery > 0 && number % retryEvery === 0 && !retried.has(body)) {
        retried.add(body);
        return Consumer.ACTION_RETRY;
      }
      received.set(body, {
        msgId: msg.msgId,
        queueId: msg.queueId,
        queueOffset: msg.queueOffset,
        tags: msg.tags,
        keys: msg.keys,
        body,
        reconsumeTimes: msg.reconsumeTimes,
        topic: msg.topic,
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
    // Let the consume loop record the offsets of the last messages before closing persists them.
    await new Promise(resolve => setTimeout(resolve, 300));
  }

  try {
    // Closing persists the consumer's offsets to the broker (UPDATE_CONSUMER_OFFSET).
    if (consumer) await consumer.close();
    await producer.close();
  } catch (err) {
    errors.push(`close: ${err.message}`);
  }
  const report = { sent, received: Array.from(received.values()), errors };
  return { code: received.size >= count ? 0 : 1, report };
}

// Exit only once the report is flushed: stdout to a pipe is asynchronous in Node,
// and process.exit() would cut a large report short.
function finishWith(code, report) {
  process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(code));
}

main().then(
  ({ code, report }) => finishWith(code, report),
  err => finishWith(1, { fatal: `${err.name}: ${err.message}`, code: err.code, errors })
);
