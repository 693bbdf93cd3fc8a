// kafkajs runs the client acceptance sequence against a broker (the same plan as
// tests/clients/acceptance.py): create a topic with admin, produce once per codec kafkajs
// supports (none and gzip natively, snappy through the kafkajs-snappy codec package; its lz4
// and zstd codecs are native add-ons that do not build here), read everything back and check
// every key/value/header/timestamp/offset, list earliest/latest/by-timestamp offsets, delete.
//
// kafkajs' consumer only works inside a consumer group. The read-back without a group uses
// kafkajs' own cluster and broker objects (Fetch requests with kafkajs' decoder) reached
// through the client's private createCluster; `--group-consume` adds a read-back through the
// public group consumer (needs the group coordinator).
//
// Usage: node check.js HOST:PORT [--records N] [--codecs none,gzip,snappy] [--timeout S] [--group-consume]
// Run with NODE_PATH pointing at the node_modules that holds kafkajs (.deps/node/node_modules).
// Exit status 0 when every check passed; 1 with the reasons otherwise.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const CODEC_TYPES = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
}
const PARTITIONS = 2
const CLIENT = `kafkajs-${require('kafkajs/package.json').version}`

class CheckFailed extends Error {}

function parseArgs(argv) {
  const args = { records: 40, codecs: Object.keys(CODEC_TYPES), timeout: 30, groupConsume: false }
  if (argv.length < 1 || argv[0].startsWith('--')) {
    console.error('usage: node check.js HOST:PORT [--records N] [--codecs none,gzip,snappy] [--timeout S] [--group-consume]')
    process.exit(2)
  }
  args.bootstrap = argv[0]
  for (let i = 1; i < argv.length; i++) {
    const option = argv[i]
    if (option === '--group-consume') args.groupConsume = true
    else if (option === '--records') args.records = parseInt(argv[++i], 10)
    else if (option === '--codecs') args.codecs = argv[++i].split(',')
    else if (option === '--timeout') args.timeout = parseFloat(argv[++i])
    else {
      console.error(`unknown option ${option}`)
      process.exit(2)
    }
  }
  for (const codec of args.codecs) {
    if (!(codec in CODEC_TYPES)) {
      console.error(`kafkajs cannot produce with codec ${codec}`)
      process.exit(2)
    }
  }
  return args
}

// The plan: record `index` runs over all codecs; partition = index % PARTITIONS; timestamps
// start ten minutes in the past; the first record of each codec has a null key.
function makePlan(codecs, recordsPerCodec) {
  const baseTimestamp = Date.now() - 10 * 60 * 1000
  const nextOffset = new Array(PARTITIONS).fill(0)
  const records = []
  codecs.forEach((codec, c) => {
    for (let i = 0; i < recordsPerCodec; i++) {
      const index = c * recordsPerCodec + i
      const partition = index % PARTITIONS
      records.push({
        index,
        codec,
        partition,
        offset: nextOffset[partition]++,
        key: i === 0 ? null : `key-${codec}-${i}`,
        value: `value ${codec} ${index} `.repeat(8 + (i % 5)),
        headers: { codec, index: String(index) },
        timestamp: baseTimestamp + index,
      })
    }
  })
  const logEndOffsets = {}
  nextOffset.forEach((offset, partition) => (logEndOffsets[partition] = offset))
  return { baseTimestamp, records, logEndOffsets }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function withTimeout(promise, seconds, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`${what} did not finish in ${seconds}s`)), seconds * 1000)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

// Each step and check names the compat-matrix features it exercises (see tests/clients/acceptance.py
// FEATURES); the last line printed is `FEATURES-JSON: {...}` for `kafka-wire compat`.
class Progress {
  constructor() {
    this.failures = []
    this.started = Date.now()
    this.features = {}
  }

  record(features, passed) {
    for (const feature of features) {
      if (!passed) this.features[feature] = 'fail'
      else if (!(feature in this.features)) this.features[feature] = 'pass'
    }
  }

  featuresLine() {
    return 'FEATURES-JSON: ' + JSON.stringify({ client: CLIENT, passed: this.failures.length === 0, features: this.features })
  }

  say(message) {
    console.log(`[${CLIENT}] ${message}`)
  }

  // Something later steps depend on: a failure ends the run.
  async step(name, body, features = []) {
    this.say(`${name} ...`)
    const began = Date.now()
    let result
    try {
      result = await body()
    } catch (error) {
      this.record(features, false)
      throw error
    }
    this.record(features, true)
    this.say(`${name}: ok (${((Date.now() - began) / 1000).toFixed(2)}s)`)
    return result
  }

  // A verification nothing later depends on: a failure is recorded and the run goes on.
  async check(name, body, features = []) {
    this.say(`${name} ...`)
    const began = Date.now()
    try {
      await body()
      this.record(features, true)
      this.say(`${name}: ok (${((Date.now() - began) / 1000).toFixed(2)}s)`)
    } catch (error) {
      this.record(features, false)
      const reason = error instanceof CheckFailed ? error.message : `${error.name}: ${error.message}`
      this.say(`${name}: FAILED: ${reason}`)
      if (!(error instanceof CheckFailed)) console.log(error.stack)
      this.failures.push(`${name}: ${reason}`)
    }
  }
}

function expectOffsets(what, got, want) {
  const show = o => JSON.stringify(Object.keys(o).sort().reduce((m, k) => ({ ...m, [k]: Number(o[k]) }), {}))
  if (show(got) !== show(want)) throw new CheckFailed(`${what}: got ${show(got)}, expected ${show(want)}`)
}

function short(buffer) {
  if (buffer === null || buffer === undefined) return String(buffer)
  const s = buffer.toString()
  return s.length > 40 ? `'${s.slice(0, 40)}'...(${s.length} bytes)` : `'${s}'`
}

// Compares what came back (kafkajs message objects) with the plan; throws CheckFailed listing problems.
function checkReceived(plan, received) {
  const byPosition = new Map(plan.records.map(r => [`${r.partition}@${r.offset}`, r]))
  const problems = []
  for (const { partition, message } of received) {
    const where = `partition ${partition} offset ${message.offset}`
    const want = byPosition.get(`${partition}@${message.offset}`)
    if (!want) {
      problems.push(`unexpected or repeated record at ${where}`)
      continue
    }
    byPosition.delete(`${partition}@${message.offset}`)
    const at = `${where} (record ${want.index}, ${want.codec})`
    const key = message.key === null ? null : message.key.toString()
    if (key !== want.key) problems.push(`${at}: key ${short(message.key)}, expected ${want.key}`)
    if (message.value === null || message.value.toString() !== want.value) {
      problems.push(`${at}: value ${short(message.value)}, expected '${want.value.slice(0, 40)}'...`)
    }
    const headers = JSON.stringify(
      Object.entries(message.headers || {}).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : String(v)])
    )
    const wantHeaders = JSON.stringify(Object.entries(want.headers))
    if (headers !== wantHeaders) problems.push(`${at}: headers ${headers}, expected ${wantHeaders}`)
    if (Number(message.timestamp) !== want.timestamp) {
      problems.push(`${at}: timestamp ${message.timestamp}, expected ${want.timestamp}`)
    }
  }
  if (byPosition.size) problems.push(`${byPosition.size} records never read back`)
  if (problems.length) {
    throw new CheckFailed(`read-back mismatch (${problems.length} problems):\n  ${problems.slice(0, 20).join('\n  ')}`)
  }
}

// Reads every partition from offset 0 to its planned log end offset with plain Fetch requests
// to each partition's leader: no consumer group involved.
async function readWithoutGroup(kafka, topic, plan, timeoutSeconds) {
  const createCluster = Object.getOwnPropertySymbols(kafka).find(
    symbol => symbol.description === 'private:Kafka:createCluster'
  )
  if (!createCluster) throw new Error('this kafkajs has no private createCluster; cannot fetch without a group')
  const cluster = kafka[createCluster]({ allowAutoTopicCreation: false })
  await cluster.connect()
  try {
    await cluster.addTargetTopic(topic)
    await cluster.refreshMetadata()
    const next = {}
    for (let p = 0; p < PARTITIONS; p++) next[p] = 0
    const received = []
    const deadline = Date.now() + timeoutSeconds * 1000
    const unfinished = () => Object.keys(next).filter(p => next[p] < plan.logEndOffsets[p]).map(Number)
    while (unfinished().length && Date.now() < deadline) {
      const byLeader = cluster.findLeaderForPartitions(topic, unfinished())
      for (const [nodeId, partitions] of Object.entries(byLeader)) {
        const broker = await cluster.findBroker({ nodeId })
        const answer = await broker.fetch({
          replicaId: -1,
          isolationLevel: 0, // read_uncommitted
          maxWaitTime: 500,
          minBytes: 1,
          maxBytes: 10 * 1024 * 1024,
          topics: [{ topic, partitions: partitions.map(p => ({ partition: p, fetchOffset: String(next[p]), maxBytes: 1024 * 1024 })) }],
        })
        for (const response of answer.responses) {
          for (const part of response.partitions) {
            if (part.errorCode !== 0) throw new CheckFailed(`Fetch partition ${part.partition}: error code ${part.errorCode}`)
            for (const message of part.messages) {
              // A fetch returns whole batches, which may start before the offset asked for.
              if (Number(message.offset) < next[part.partition] || message.isControlRecord) continue
              received.push({ partition: part.partition, message })
              next[part.partition] = Number(message.offset) + 1
            }
          }
        }
      }
    }
    return received
  } finally {
    await cluster.disconnect()
  }
}

async function readWithGroup(kafka, topic, plan, timeoutSeconds) {
  const consumer = kafka.consumer({ groupId: `${topic}-group`, allowAutoTopicCreation: false })
  const received = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    let done
    const allRead = new Promise(resolve => (done = resolve))
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        received.push({ partition, message })
        if (received.length >= plan.records.length) done()
      },
    })
    await Promise.race([allRead, sleep(timeoutSeconds * 1000)])
  } finally {
    await consumer.disconnect()
  }
  return received
}

async function run(progress, args) {
  const plan = makePlan(args.codecs, args.records)
  const topic = `check-kafkajs-${Math.random().toString(16).slice(2, 12)}`
  const partitions = [...Array(PARTITIONS).keys()]
  progress.say(`topic ${topic}, ${plan.records.length} records, codecs ${args.codecs.join(',')}`)

  const kafka = new Kafka({
    clientId: 'kafka-wire-check',
    brokers: [args.bootstrap],
    connectionTimeout: 3000,
    requestTimeout: args.timeout * 1000,
    retry: { retries: 3 },
    logLevel: logLevel.WARN,
  })
  const admin = kafka.admin()
  await progress.step('connect admin client', () => withTimeout(admin.connect(), args.timeout, 'connect'), ['metadata'])

  await progress.step(`createTopics (${PARTITIONS} partitions)`, async () => {
    const created = await withTimeout(
      admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true }),
      args.timeout, 'createTopics')
    if (!created) throw new CheckFailed('createTopics answered that the topic already exists')
  }, ['admin'])

  await progress.step('fetchTopicMetadata', async () => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
    const found = topics.find(t => t.name === topic)
    if (!found || found.partitions.length !== PARTITIONS || found.partitions.some(p => p.leader < 0)) {
      throw new CheckFailed(`unexpected metadata ${JSON.stringify(topics)}`)
    }
  }, ['metadata'])

  for (const codec of args.codecs) {
    const records = plan.records.filter(r => r.codec === codec)
    await progress.step(`produce ${records.length} records, compression ${codec}`, async () => {
      const producer = kafka.producer({ allowAutoTopicCreation: false })
      await producer.connect()
      try {
        const acks = await withTimeout(producer.send({
          topic,
          compression: CODEC_TYPES[codec],
          messages: records.map(r => ({
            key: r.key,
            value: r.value,
            partition: r.partition,
            headers: r.headers,
            timestamp: String(r.timestamp),
          })),
        }), args.timeout, 'send')
        // One produce answer per partition, with the base offset of that partition's batch.
        for (const ack of acks) {
          const first = records.find(r => r.partition === ack.partition)
          if (ack.errorCode !== 0 || Number(ack.baseOffset) !== first.offset) {
            throw new CheckFailed(`partition ${ack.partition} acked error ${ack.errorCode} base offset ` +
              `${ack.baseOffset}, expected ${first.offset}`)
          }
        }
      } finally {
        await producer.disconnect()
      }
    }, [`produce:${codec}`])
  }

  await progress.check('read back everything (Fetch without a consumer group)', async () => {
    const received = await readWithoutGroup(kafka, topic, plan, args.timeout)
    progress.say(`read ${received.length} of ${plan.records.length} records`)
    checkReceived(plan, received)
  }, ['fetch'])

  if (args.groupConsume) {
    await progress.check('read back everything (consumer group, subscribe fromBeginning)', async () => {
      const received = await readWithGroup(kafka, topic, plan, args.timeout)
      progress.say(`read ${received.length} of ${plan.records.length} records`)
      checkReceived(plan, received)
    }, ['groups'])
  }

  const byPartition = (list, field) => list.reduce((m, o) => ({ ...m, [o.partition]: o[field] }), {})
  const everywhere = value => partitions.reduce((m, p) => ({ ...m, [p]: value }), {})

  await progress.check('admin.fetchTopicOffsets (earliest and latest)', async () => {
    const offsets = await admin.fetchTopicOffsets(topic)
    expectOffsets('low (earliest)', byPartition(offsets, 'low'), everywhere(0))
    expectOffsets('high (latest)', byPartition(offsets, 'high'), plan.logEndOffsets)
  }, ['list-offsets'])

  await progress.check('admin.fetchTopicOffsetsByTimestamp', async () => {
    const target = plan.baseTimestamp + Math.floor(plan.records.length / 2) + 1
    const want = everywhere(-1)
    for (const r of plan.records) if (r.timestamp >= target && want[r.partition] === -1) want[r.partition] = r.offset
    expectOffsets(`timestamp ${target}`, byPartition(await admin.fetchTopicOffsetsByTimestamp(topic, target), 'offset'), want)
    // kafkajs answers the high watermark where no record is that late (the broker says -1).
    const afterLast = plan.baseTimestamp + plan.records.length + 60000
    expectOffsets('after the last record', byPartition(await admin.fetchTopicOffsetsByTimestamp(topic, afterLast), 'offset'),
      plan.logEndOffsets)
  }, ['list-offsets'])

  await progress.step('deleteTopics', async () => {
    await withTimeout(admin.deleteTopics({ topics: [topic] }), args.timeout, 'deleteTopics')
    const deadline = Date.now() + args.timeout * 1000
    while ((await admin.listTopics()).includes(topic)) {
      if (Date.now() > deadline) throw new CheckFailed('topic still listed after delete')
      await sleep(200)
    }
  }, ['admin'])
  await admin.disconnect()
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const progress = new Progress()
  try {
    await run(progress, args)
  } catch (error) {
    const reason = error instanceof CheckFailed ? error.message : `${error.name}: ${error.message}`
    progress.failures.push(reason)
    progress.say(`FAILED: ${reason}`)
    if (!(error instanceof CheckFailed)) console.log(error.stack)
  }
  const elapsed = ((Date.now() - progress.started) / 1000).toFixed(1)
  if (progress.failures.length) {
    progress.say(`${progress.failures.length} CHECK(S) FAILED (${elapsed}s):`)
    for (const failure of progress.failures) progress.say(`  - ${failure.split('\n')[0]}`)
    console.log(progress.featuresLine())
    process.exit(1)
  }
  progress.say(`ALL CHECKS PASSED (${elapsed}s)`)
  console.log(progress.featuresLine())
  process.exit(0)
}

main()
