// The official RocketMQ 5 Node.js client (rocketmq-client-nodejs) sending one message through the
// gRPC port with its default settings (plain text) or with sslEnabled: true.
//   node tls_node_client.js ENDPOINT TOPIC default|tls BODY
// The client verifies the server against the system's CAs; the test points grpc-js at its own CA
// with GRPC_DEFAULT_SSL_ROOTS_FILE_PATH. Prints `RESULT <json>`; bounded by a 30 s deadline.
'use strict';

const { Producer } = require('rocketmq-client-nodejs');

async function main() {
  const [endpoint, topic, mode, body] = process.argv.slice(2);
  const options = { endpoints: endpoint, topics: [topic], requestTimeout: 3000 };
  if (mode === 'tls') {
    options.sslEnabled = true;
  }
  const producer = new Producer(options);
  let result;
  try {
    await producer.startup();
    result = { ok: true, id: (await producer.send({ topic, body: Buffer.from(body) })).messageId };
  } catch (err) {
    result = { ok: false, error: String(err && err.message || err) };
  }
  try {
    await producer.shutdown();
  } catch (err) {
    // the result stands
  }
  console.log('RESULT ' + JSON.stringify(result));
  process.exit(0);
}

setTimeout(() => { console.log('RESULT ' + JSON.stringify({ ok: false, error: 'deadline' })); process.exit(0); }, 30000);
main();
