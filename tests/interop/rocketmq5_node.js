// The official RocketMQ 5 Node.js client (rocketmq-client-nodejs) against OrbitMQ's gRPC front.
//   node rocketmq5_node.js SCENARIO ENDPOINT TOPIC GROUP N
// simple: a SimpleConsumer joins the group, a Producer sends N messages, the consumer receives and
//         acks them. fifo: N messages in each of the groups ga, gb, received in order per group.
// push:   a PushConsumer consumes N messages. tx: a committed and a rolled-back transaction.
// Prints `RESULT <json>`; bounded by a 60 s deadline.
'use strict';

const { ConsumeResult, Producer, PushConsumer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const deadline = Date.now() + 60000;

async function produce(endpoint, topic, messages, checker) {
  const producer = new Producer({ endpoints: endpoint, topics: [topic], checker });
  await producer.startup();
  const ids = [];
  try {
    for (const m of messages) {
      ids.push((await producer.send({ topic, ...m })).messageId);
    }
  } finally {
    await producer.shutdown();
  }
  return ids;
}

async function simpleRoundtrip(endpoint, topic, group, messages) {
  const consumer = new SimpleConsumer({
    endpoints: endpoint, consumerGroup: group, subscriptions: new Map().set(topic, '*'), awaitDuration: 5000,
  });
  await consumer.startup();
  await consumer.receive(1, 10000); // a new group starts at the end of each queue: join first
  const sent = await produce(endpoint, topic, messages);
  const got = [];
  while (got.length < messages.length && Date.now() < deadline) {
    for (const message of await consumer.receive(16, 15000)) {
      got.push({ id: message.messageId, body: message.body.toString(), group: message.messageGroup || '' });
      await consumer.ack(message);
    }
  }
  await consumer.shutdown();
  return { sent, got };
}

async function main() {
  const [scenario, endpoint, topic, group, count] = process.argv.slice(2);
  const n = Number(count);
  let result;
  if (scenario === 'simple') {
    const messages = [...Array(n).keys()].map(i => ({ tag: 'node', keys: [ 'k' + i ], body: Buffer.from('node ' + i) }));
    const r = await simpleRoundtrip(endpoint, topic, group, messages);
    result = { sent: r.sent, got: r.got.map(m => m.id) };
  } else if (scenario === 'fifo') {
    const messages = [];
    for (let i = 0; i < n; i++) {
      for (const g of [ 'ga', 'gb' ]) messages.push({ messageGroup: g, body: Buffer.from(g + ':' + i) });
    }
    result = (await simpleRoundtrip(endpoint, topic, group, messages)).got;
  } else if (scenario === 'push') {
    const got = [];
    const consumer = new PushConsumer({
      endpoints: endpoint, consumerGroup: group, subscriptions: new Map([[ topic, '*' ]]),
      messageListener: { async consume(view) { got.push(view.body.toString()); return ConsumeResult.SUCCESS; } },
    });
    await consumer.startup();
    await produce(endpoint, topic, [...Array(n).keys()].map(i => ({ body: Buffer.from('push ' + i) })));
    while (got.length < n && Date.now() < deadline) await new Promise(r => setTimeout(r, 100));
    // Its shutdown waits for the receive parked in long polling (up to 20 s): not waited for to the end.
    await Promise.race([ consumer.shutdown(), new Promise(r => setTimeout(r, 2000)) ]);
    result = got;
  } else if (scenario === 'tx') {
    const checker = { async check() { return TransactionResolution.ROLLBACK; } };
    const producer = new Producer({ endpoints: endpoint, topics: [ topic ], checker });
    await producer.startup();
    try {
      const committed = producer.beginTransaction();
      const kept = await producer.send({ topic, body: Buffer.from('node commit') }, committed);
      await committed.commit();
      const dropped = producer.beginTransaction();
      await producer.send({ topic, body: Buffer.from('node rollback') }, dropped);
      await dropped.rollback();
      result = { committed: kept.messageId };
    } finally {
      await producer.shutdown();
    }
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
  console.log('RESULT ' + JSON.stringify(result));
}

const timer = setTimeout(() => { console.error('timed out'); process.exit(3); }, 80000);
main().then(() => { clearTimeout(timer); process.exit(0); }, (err) => { console.error(err); process.exit(1); });
