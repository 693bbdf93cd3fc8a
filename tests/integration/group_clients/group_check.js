// kafkajs consumers in a group against a broker: member a owns every partition, member b joins
// and they share, b disconnects and a takes everything back; every record is consumed, and one
// is consumed twice only when its commit failed. Offsets are committed after each message.
//
// Usage: node group_check.js HOST:PORT [TIMEOUT_S]   (NODE_PATH must reach kafkajs)
// Prints ALL CHECKS PASSED and exits 0, or prints the failure and exits 1.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const PARTITIONS = 3
const RECORDS = 300
const bootstrap = process.argv[2]
const timeoutMs = (Number(process.argv[3]) || 60) * 1000
const topic = `kafkajs-group-${Date.now()}-${Math.floor(Math.random() * 1e6)}`
const groupId = topic
const kafka = new Kafka({ clientId: 'kafkajs-group-check', brokers: [bootstrap], logLevel: logLevel.NOTHING })
const consumed = new Map()
const uncommitted = new Set()

function sleep (ms) { return new Promise(resolve => setTimeout(resolve, ms)) }

async function waitFor (what, condition) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

async function member (name) {
  const state = { assignment: new Set() }
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 10000 })
  consumer.on(consumer.events.GROUP_JOIN, event => {
    const assigned = event.payload.memberAssignment[topic] || []
    state.assignment = new Set(assigned)
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      const value = Number(message.value.toString())
      if (!consumed.has(value)) consumed.set(value, [])
      consumed.get(value).push(name)
      try {
        await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
      } catch (e) {
        uncommitted.add(value)
      }
    }
  })
  state.consumer = consumer
  return state
}

async function produce (producer, from, to) {
  const messages = []
  for (let i = from; i < to; i++) messages.push({ value: String(i), partition: i % PARTITIONS })
  await producer.send({ topic, messages })
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] })
  const producer = kafka.producer()
  await producer.connect()
  await produce(producer, 0, RECORDS / 3)
  const a = await member('a')
  await waitFor('member a to own all partitions', () => a.assignment.size === PARTITIONS)
  const b = await member('b')
  await waitFor('a and b to share the partitions',
    () => a.assignment.size > 0 && b.assignment.size > 0 && a.assignment.size + b.assignment.size === PARTITIONS)
  await produce(producer, RECORDS / 3, 2 * RECORDS / 3)
  await sleep(500)
  await b.consumer.disconnect()
  await waitFor('a to take every partition back', () => a.assignment.size === PARTITIONS)
  await produce(producer, 2 * RECORDS / 3, RECORDS)
  await waitFor('every record to be consumed', () => consumed.size >= RECORDS)
  await a.consumer.disconnect()
  for (let i = 0; i < RECORDS; i++) {
    const who = consumed.get(i)
    if (!who) throw new Error(`record ${i} never consumed`)
    if (who.length > 1 && !uncommitted.has(i)) throw new Error(`record ${i} consumed twice: ${who}`)
  }
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  const total = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0)
  if (total !== RECORDS) throw new Error(`committed offsets sum to ${total}, not ${RECORDS}`)
  const described = await admin.describeGroups([groupId])
  if (described.groups[0].state !== 'Empty') throw new Error(`group state ${described.groups[0].state}, not Empty`)
  await admin.deleteGroups([groupId])
  const listed = await admin.listGroups()
  if (listed.groups.some(g => g.groupId === groupId)) throw new Error('deleted group still listed')
  await producer.disconnect()
  await admin.disconnect()
}

main().then(() => {
  console.log('ALL CHECKS PASSED')
  process.exit(0)
}, error => {
  console.log(error && error.stack ? error.stack : String(error))
  process.exit(1)
})
