// kafkajs logs in (SASL and/or TLS), produces and reads back a few records; or, with
// --expect-refusal, checks that the broker refuses the login with an authentication error.
//
// Usage: node security_check.js HOST:PORT TOPIC PROTOCOL MECHANISM USER PASSWORD CA_PEM [--expect-refusal]
// Run with NODE_PATH pointing at the node_modules that holds kafkajs (.deps/node/node_modules).
// Prints ALL CHECKS PASSED (or REFUSED AS EXPECTED: ...) and exits 0; exits 1 otherwise.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const RECORDS = 5

async function main() {
  const [bootstrap, topic, protocol, mechanism, user, password, ca, flag] = process.argv.slice(2)
  const expectRefusal = flag === '--expect-refusal'
  const config = { clientId: 'kafka-wire-security-check', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                   connectionTimeout: 10000, requestTimeout: 20000, retry: { retries: 1 } }
  if (protocol.endsWith('SSL')) config.ssl = { ca: [fs.readFileSync(ca, 'utf-8')] }
  if (protocol.startsWith('SASL')) config.sasl = { mechanism: mechanism.toLowerCase(), username: user, password }
  const kafka = new Kafka(config)
  const producer = kafka.producer()
  try {
    await producer.connect()
    await producer.send({ topic, acks: -1, messages: Array.from({ length: RECORDS }, (_, i) => (
      { key: `k${i}`, value: `secured value ${i}`, partition: 0 })) })
  } catch (error) {
    if (expectRefusal && /SASL|[Aa]uthentication/.test(`${error.name} ${error.message}`)) {
      console.log(`REFUSED AS EXPECTED: ${error.name}: ${error.message}`)
      return 0
    }
    console.log(`FAILED: ${error.name}: ${error.message}`)
    return 1
  } finally {
    await producer.disconnect().catch(() => {})
  }
  if (expectRefusal) {
    console.log('FAILED: the login succeeded')
    return 1
  }
  // kafkajs reads only inside a consumer group: check the records arrived with ListOffsets.
  const admin = kafka.admin()
  await admin.connect()
  const offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  const end = Number(offsets.find((o) => o.partition === 0).high)
  if (end < RECORDS) {
    console.log(`FAILED: the log end offset is ${end}`)
    return 1
  }
  console.log('ALL CHECKS PASSED')
  return 0
}

main().then((code) => process.exit(code), (error) => {
  console.log(`FAILED: ${error.stack || error}`)
  process.exit(1)
})
