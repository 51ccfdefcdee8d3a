#!/usr/bin/env node
// KafkaJS, unmodified, against an Odradek broker. Run by tests/integration/test_other_clients.py:
//
//   node kafkajs_client.js <command> '<json arguments>'
//
// Each command prints one JSON object on stdout (KafkaJS's own log lines go to stderr) and exits
// 0, or prints the error on stderr and exits 1. Commands:
//   produce   {brokers, topic, codec, count, partitions, idempotent, acks}  keys, null values,
//             headers and timestamps; returns what was sent and the offsets the broker assigned
//   consume   {brokers, topic, group, count, timeoutMs}  a consumer group member that subscribes
//             from the beginning, reads `count` messages, commits them explicitly, leaves
//   admin     {brokers, topic, group}  create topic (with configs), list, metadata, offsets,
//             describe/alter configs, create partitions, delete records, groups, delete topic
//   codecs    {}  which compression codecs this installation can use
// Every command also takes `clientId` (default odradek-kafkajs-<role>).
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')

// Codecs beyond gzip come from plugin packages (optional dependencies, native builds for lz4
// and zstd); use each one only if it loads here.
const available = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
try {
  CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
  available.snappy = CompressionTypes.Snappy
} catch (e) {}
try {
  const LZ4Codec = require('kafkajs-lz4')
  CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
  available.lz4 = CompressionTypes.LZ4
} catch (e) {}
// zstd: @sensejs/kafkajs-zstd-support (zstd-napi, built from its bundled sources) registers
// itself in CompressionCodecs when imported; only its ES module build loads (the CommonJS one
// lacks its tslib helpers). @kafkajs/zstd needs cppzst, which fails to build against Node 20.
async function loadZstd() {
  try {
    await import('@sensejs/kafkajs-zstd-support')
    available.zstd = CompressionTypes.ZSTD
  } catch (e) {}
}

const LEVELS = { [logLevel.ERROR]: 'ERROR', [logLevel.WARN]: 'WARN', [logLevel.INFO]: 'INFO', [logLevel.DEBUG]: 'DEBUG' }
const logCreator = () => ({ namespace, level, log }) => {
  const { message, timestamp, ...extra } = log
  process.stderr.write(`${timestamp} ${LEVELS[level]} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

function client(args, id) {
  return new Kafka({
    clientId: args.clientId || id,
    brokers: args.brokers,
    logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.WARN,
    logCreator,
    retry: { retries: 5, initialRetryTime: 100 },
  })
}

const str = b => (b === null || b === undefined ? null : b.toString())

async function produce(args) {
  const kafka = client(args, 'odradek-kafkajs-producer')
  const idempotent = Boolean(args.idempotent)
  const producer = kafka.producer(idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {})
  await producer.connect()
  const partitions = args.partitions || 1
  const sent = []
  const offsets = []
  try {
    // A few requests, each with a batch per partition.
    const perRequest = Math.ceil(args.count / 3)
    for (let start = 0; start < args.count; start += perRequest) {
      const messages = []
      for (let i = start; i < Math.min(args.count, start + perRequest); i++) {
        const m = {
          partition: i % partitions,
          key: i % 7 === 0 ? null : `key-${i}`,
          value: i % 11 === 0 ? null : `value-${i}-`.repeat(1 + (i % 20)),
          timestamp: String(1700000000000 + i),
        }
        if (i % 3 === 0) m.headers = { h1: 'x', h2: `header-${i}` }
        messages.push(m)
        sent.push({ ...m, timestamp: Number(m.timestamp), headers: m.headers || {} })
      }
      const acks = args.acks === undefined ? -1 : args.acks
      const result = await producer.send({
        topic: args.topic,
        compression: available[args.codec || 'none'],
        acks,
        messages,
      })
      for (const r of result) offsets.push({ partition: r.partition, baseOffset: r.baseOffset })
    }
  } finally {
    await producer.disconnect()
  }
  return { sent, offsets }
}

// Transactions (KIP-98): commit one batch, abort one, commit another, each in its own
// transaction of the same transactional producer.
async function transactions(args) {
  const kafka = client(args, 'odradek-kafkajs-txn')
  const producer = kafka.producer({
    transactionalId: args.transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
  })
  await producer.connect()
  const outcomes = []
  try {
    for (const [i, outcome] of ['commit', 'abort', 'commit'].entries()) {
      const txn = await producer.transaction()
      await txn.send({
        topic: args.topic,
        messages: [0, 1, 2].map(j => ({ key: `k-${i}-${j}`, value: `${outcome}-${i}-${j}` })),
      })
      if (outcome === 'commit') await txn.commit()
      else await txn.abort()
      outcomes.push(outcome)
    }
  } finally {
    await producer.disconnect()
  }
  return { outcomes }
}

async function consume(args) {
  const kafka = client(args, 'odradek-kafkajs-consumer')
  const consumer = kafka.consumer({
    groupId: args.group,
    maxWaitTimeInMs: 200,
    sessionTimeout: args.sessionTimeoutMs || 10000,
    heartbeatInterval: 1000,
    rebalanceTimeout: 10000,
  })
  const got = []
  const next = {} // partition -> next offset to commit
  let done
  const finished = new Promise(resolve => (done = resolve))
  const timer = setTimeout(done, args.timeoutMs || 30000)
  let assigned = []
  consumer.on(consumer.events.GROUP_JOIN, e => {
    assigned = e.payload.memberAssignment[args.topic] || []
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (got.length >= args.count) return
        const headers = {}
        for (const [k, v] of Object.entries(message.headers || {})) headers[k] = str(v)
        got.push({
          partition,
          offset: Number(message.offset),
          key: str(message.key),
          value: str(message.value),
          timestamp: Number(message.timestamp),
          headers,
        })
        next[partition] = Number(message.offset) + 1
        if (got.length >= args.count) done()
      },
    })
    await finished
    clearTimeout(timer)
    const commits = Object.entries(next).map(([partition, offset]) => ({
      topic: args.topic,
      partition: Number(partition),
      offset: String(offset),
    }))
    if (commits.length) await consumer.commitOffsets(commits)
    return { messages: got, committed: commits, assigned }
  } finally {
    await consumer.disconnect()
  }
}

async function admin(args) {
  const kafka = client(args, 'odradek-kafkajs-admin')
  const adm = kafka.admin()
  await adm.connect()
  const out = {}
  const topic = args.topic
  try {
    out.created = await adm.createTopics({
      topics: [
        {
          topic,
          numPartitions: 2,
          replicationFactor: 1,
          configEntries: [{ name: 'retention.ms', value: '3600000' }],
        },
      ],
      waitForLeaders: true,
    })
    out.createdAgain = await adm.createTopics({ topics: [{ topic, numPartitions: 2 }] })
    out.listed = (await adm.listTopics()).includes(topic)
    const meta = await adm.fetchTopicMetadata({ topics: [topic] })
    out.partitions = meta.topics[0].partitions.map(p => p.partitionId).sort()
    out.cluster = await adm.describeCluster()

    const describe = async () => {
      const res = await adm.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
        includeSynonyms: false,
      })
      const configs = {}
      for (const e of res.resources[0].configEntries) configs[e.configName] = e.configValue
      return { errorCode: res.resources[0].errorCode, configs }
    }
    out.describedBefore = await describe()
    await adm.alterConfigs({
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topic,
          configEntries: [
            { name: 'retention.ms', value: '7200000' },
            { name: 'cleanup.policy', value: 'compact,delete' },
          ],
        },
      ],
    })
    out.describedAfter = await describe()
    const broker = await adm.describeConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(out.cluster.brokers[0].nodeId) }],
      includeSynonyms: false,
    })
    out.brokerConfigCount = broker.resources[0].configEntries.length

    await adm.createPartitions({ topicPartitions: [{ topic, count: 3 }] })
    const meta2 = await adm.fetchTopicMetadata({ topics: [topic] })
    out.partitionsAfter = meta2.topics[0].partitions.map(p => p.partitionId).sort()

    // Records to delete, then DeleteRecords and the offsets it leaves. The topic is compacted
    // now, so every record needs a key (Kafka refuses keyless ones with INVALID_RECORD); its
    // policy keeps delete, without which Kafka refuses DeleteRecords (POLICY_VIOLATION).
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({
      topic,
      messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, key: `k${i}`, value: `m${i}` })),
    })
    await producer.disconnect()
    await adm.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
    out.offsets = (await adm.fetchTopicOffsets(topic)).sort((a, b) => a.partition - b.partition)
    out.offsetsByTime = await adm.fetchTopicOffsetsByTimestamp(topic, 0)

    if (args.group) {
      await adm.setOffsets({ groupId: args.group, topic, partitions: [{ partition: 0, offset: '6' }] })
      out.groupOffsets = await adm.fetchOffsets({ groupId: args.group, topics: [topic] })
      out.groups = (await adm.listGroups()).groups.map(g => g.groupId)
      out.describedGroups = (await adm.describeGroups([args.group])).groups.map(g => ({
        groupId: g.groupId,
        state: g.state,
        errorCode: g.errorCode,
      }))
      out.deletedGroups = await adm.deleteGroups([args.group])
    }

    out.deleted = await adm.deleteTopics({ topics: [topic], timeout: 10000 })
    out.listedAfterDelete = (await adm.listTopics()).includes(topic)
  } finally {
    await adm.disconnect()
  }
  return out
}

const COMMANDS = {
  produce,
  consume,
  admin,
  transactions,
  codecs: async () => ({ codecs: Object.keys(available) }),
}

async function main() {
  const [command, json] = process.argv.slice(2)
  await loadZstd()
  const fn = COMMANDS[command]
  if (!fn) throw new Error(`unknown command ${command}; one of ${Object.keys(COMMANDS).join(', ')}`)
  const result = await fn(json ? JSON.parse(json) : {})
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().then(
  () => process.exit(0),
  e => {
    process.stderr.write(`FAILED: ${e && e.stack ? e.stack : e}\n`)
    process.exit(1)
  },
)
