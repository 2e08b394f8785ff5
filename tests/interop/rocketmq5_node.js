// The official RocketMQ 5 Node.js client (rocketmq-client-nodejs) against OrbitMQ's gRPC front.
//   node rocketmq5_node.js ENDPOINT TOPIC GROUP N
// A SimpleConsumer joins the group, a Producer sends N messages, the consumer receives and acks
// them; prints `RESULT {"sent": [...ids], "got": [...ids]}`. Bounded by a 60 s deadline.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

async function main() {
  const [endpoint, topic, group, count] = process.argv.slice(2);
  const n = Number(count);
  const deadline = Date.now() + 60000;
  const consumer = new SimpleConsumer({
    endpoints: endpoint, consumerGroup: group, subscriptions: new Map().set(topic, '*'), awaitDuration: 5000,
  });
  await consumer.startup();
  await consumer.receive(1, 10000); // a new group starts at the end of each queue: join first
  const producer = new Producer({ endpoints: endpoint, topics: [topic] });
  await producer.startup();
  const sent = [];
  for (let i = 0; i < n; i++) {
    const receipt = await producer.send({ topic, tag: 'node', keys: ['k' + i], body: Buffer.from('node ' + i) });
    sent.push(receipt.messageId);
  }
  await producer.shutdown();
  const got = [];
  while (got.length < n && Date.now() < deadline) {
    const messages = await consumer.receive(16, 15000);
    for (const message of messages) {
      got.push(message.messageId);
      await consumer.ack(message);
    }
  }
  await consumer.shutdown();
  console.log('RESULT ' + JSON.stringify({ sent, got }));
}

const timer = setTimeout(() => { console.error('timed out'); process.exit(3); }, 80000);
main().then(() => { clearTimeout(timer); process.exit(0); }, (err) => { console.error(err); process.exit(1); });
