// Kafka's own Java client (kafka-clients 3.9.x and 4.x) against a broker: the scenarios the
// reference tests run (tests/reference/test_java_clients.py). Compiled by the test set-up with
// javac against each client release's jars (tests/reference/.cache/<version>/lib); the sources
// of v4/ (4.0 client API, the "kip848-*" scenarios) against 4.x releases only.
//
// Usage: java -cp <classes>:<kafka jars> ClientScenarios BOOTSTRAP PREFIX SCENARIO...
// Prints one line per scenario: "RESULT<TAB>name<TAB>OK<TAB>detail" or
// "RESULT<TAB>name<TAB>FAIL<TAB>reason"; exits 0 when it ran every scenario (whatever they gave).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class ClientScenarios {
    static final Duration POLL = Duration.ofMillis(100);
    static final long WAIT_MS = 60_000;

    private final String bootstrap;
    final String prefix;

    private ClientScenarios(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
    }

    public static void main(String[] args) {
        ClientScenarios s = new ClientScenarios(args[0], args[1]);
        for (int i = 2; i < args.length; i++) {
            String name = args[i];
            String outcome;
            try {
                outcome = "OK\t" + s.run(name);
            } catch (Throwable e) {
                Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                outcome = "FAIL\t" + cause.getClass().getName() + ": " + String.valueOf(cause.getMessage()).replace('\n', ' ')
                        + where(e);
            }
            System.out.println("RESULT\t" + name + "\t" + outcome);
            System.out.flush();
        }
        System.exit(0);
    }

    /** Where a scenario failed: its own frames of the stack (the innermost first), so that a
     *  timeout says which step it timed out in. */
    private static String where(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (StackTraceElement f : e.getStackTrace()) {
            String cls = f.getClassName();
            if (!cls.startsWith("ClientScenarios") && !cls.startsWith("Kip848Scenarios")) continue;
            b.append(b.length() == 0 ? " (at " : " < ").append(f.getMethodName()).append(':').append(f.getLineNumber());
        }
        return b.length() == 0 ? "" : b.append(')').toString();
    }

    private String run(String name) throws Exception {
        switch (name) {
            case "produce-consume": return produceConsume();
            case "groups-eager": return groups("org.apache.kafka.clients.consumer.RangeAssignor", false);
            case "groups-cooperative": return groups("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", true);
            case "admin": return admin();
            case "transactions": return transactions();
            case "transactions-fencing": return transactionsFencing();
            case "transactions-eos": return transactionsEos();
            case "consumer-protocol": return consumerProtocol();
            default:
                if (name.startsWith("kip848-")) return fourX().run(name);
                throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    /** Scenarios of a source file compiled only against a 4.x client (java/v4/). */
    interface Scenarios {
        String run(String name) throws Exception;
    }

    private Scenarios fourX;

    private Scenarios fourX() throws ReflectiveOperationException {
        if (fourX == null) {
            // loaded by name: the 3.9 client's compilation has no v4/ sources
            fourX = (Scenarios) Class.forName("Kip848Scenarios").getDeclaredConstructor(ClientScenarios.class).newInstance(this);
        }
        return fourX;
    }

    // --- helpers -------------------------------------------------------------------------

    static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }

    static void waitUntil(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    Admin admin_() {
        Properties p = common();
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        return Admin.create(p);
    }

    KafkaProducer<String, String> producer(Map<String, String> extra) {
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    KafkaConsumer<String, String> consumer(String group, Map<String, String> extra) {
        Properties p = common();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    /** Creates a topic and waits until its leader serves every partition. Kafka (4.4 seen)
     *  shows a new partition's leader in Metadata a moment before its replica manager has the
     *  partition: an idempotent producer's first batch can then be refused
     *  (NOT_LEADER_OR_FOLLOWER) while the second, right behind it, is written, and the first's
     *  retry (sequence 0) is OUT_OF_ORDER_SEQUENCE_NUMBER until the delivery timeout (a loaded
     *  run expired 73 records after 120 s so). ListOffsets is answered by the replica manager
     *  itself, and the admin client retries it until the partitions are there. */
    void createTopic(Admin admin, String topic, int partitions, Map<String, String> configs) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all().get(60, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int i = 0; i < partitions; i++) latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
        // KRaft's brokers learn of the topic a moment after CreateTopics answers; until then
        // the admin client's metadata lookup fails with UnknownTopicOrPartitionException
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            try {
                admin.listOffsets(latest).all().get(60, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)
                        || System.currentTimeMillis() > deadline) throw e;
                Thread.sleep(100);
            }
        }
    }

    List<ConsumerRecord<String, String>> drain(KafkaConsumer<String, String> c, int expected) throws InterruptedException {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (got.size() < expected) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("consumed " + got.size() + " of " + expected);
            for (ConsumerRecord<String, String> r : c.poll(POLL)) got.add(r);
        }
        return got;
    }

    // --- scenarios ------------------------------------------------------------------------

    /** Idempotent producers with every codec, headers, keys; a group consumer reads all, commits. */
    private String produceConsume() throws Exception {
        String topic = prefix + "-pc";
        String[] codecs = {"none", "gzip", "snappy", "lz4", "zstd"};
        int perCodec = 40;
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 3, Map.of());
        }
        Set<String> sent = new HashSet<>();
        for (String codec : codecs) {
            try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true"))) {
                List<java.util.concurrent.Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < perCodec; i++) {
                    String value = codec + "-" + i;
                    ProducerRecord<String, String> r = new ProducerRecord<>(topic, "k" + i, value);
                    r.headers().add("codec", codec.getBytes());
                    acks.add(p.send(r));
                    sent.add(value);
                }
                for (java.util.concurrent.Future<RecordMetadata> f : acks) {
                    RecordMetadata m = f.get(60, TimeUnit.SECONDS);
                    check(m.offset() >= 0 && m.timestamp() > 0, "metadata " + m);
                }
            }
        }
        String group = prefix + "-pc-group";
        int total = codecs.length * perCodec;
        try (KafkaConsumer<String, String> c = consumer(group, Map.of())) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = drain(c, total);
            Set<String> values = new HashSet<>();
            Map<Integer, Long> next = new HashMap<>();
            for (ConsumerRecord<String, String> r : got) {
                values.add(r.value());
                Header h = r.headers().lastHeader("codec");
                check(h != null && r.value().startsWith(new String(h.value()) + "-"), "header of " + r);
                long expected = next.getOrDefault(r.partition(), 0L);
                check(r.offset() == expected, "offset " + r.offset() + " on " + r.partition() + ", expected " + expected);
                next.put(r.partition(), expected + 1);
            }
            check(values.equals(sent), "values differ: got " + values.size() + " distinct");
            c.commitSync();
            long committed = 0;
            Set<TopicPartition> parts = c.assignment();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : c.committed(parts).entrySet()) committed += e.getValue().offset();
            check(committed == total, "committed " + committed);
        }
        return "produced and consumed " + total + " records over " + codecs.length + " codecs";
    }

    /** Two members of one group: the second one's join moves half the partitions. */
    private String groups(String assignor, boolean cooperative) throws Exception {
        String topic = prefix + (cooperative ? "-coop" : "-eager");
        String group = topic + "-group";
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 4, Map.of());
        }
        Map<String, String> cfg = Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000",
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        Set<TopicPartition> revokedA = Collections.synchronizedSet(new HashSet<>());
        String detail;
        try (KafkaConsumer<String, String> a = consumer(group, cfg); KafkaConsumer<String, String> b = consumer(group, cfg)) {
            a.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) { revokedA.addAll(partitions); }
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) { }
            });
            waitUntil(() -> { a.poll(POLL); return a.assignment().size() == 4; }, "the first member to own 4 partitions");
            Set<TopicPartition> before = new HashSet<>(a.assignment());
            b.subscribe(List.of(topic));
            waitUntil(() -> {
                a.poll(POLL);
                b.poll(POLL);
                Set<TopicPartition> all = new HashSet<>(a.assignment());
                all.addAll(b.assignment());
                return a.assignment().size() == 2 && b.assignment().size() == 2 && all.size() == 4;
            }, "two members with 2 partitions each");
            Set<TopicPartition> moved = new HashSet<>(before);
            moved.removeAll(a.assignment());
            if (cooperative) {
                check(revokedA.equals(moved), "cooperative: revoked " + revokedA + ", moved " + moved);
            } else {
                check(revokedA.containsAll(before), "eager: revoked " + revokedA + " of " + before);
            }
            detail = (cooperative ? "cooperative" : "eager") + ": the first member revoked "
                    + new TreeSet<>(revokedA.stream().map(TopicPartition::partition).toList())
                    + " when the second joined";
            a.commitSync();
            a.close(Duration.ofSeconds(30));
            waitUntil(() -> { b.poll(POLL); return b.assignment().size() == 4; }, "the remaining member to own 4 partitions");
        }
        return detail;
    }

    /** The admin client's everyday calls. */
    private String admin() throws Exception {
        String topic = prefix + "-admin";
        List<String> done = new ArrayList<>();
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 1, Map.of("cleanup.policy", "delete", "retention.ms", "86400000"));
            try {
                createTopic(admin, topic, 1, Map.of());
                throw new AssertionError("a second CreateTopics succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof TopicExistsException, "duplicate create: " + e.getCause());
            }
            done.add("create");
            check(admin.listTopics().names().get().contains(topic), "listTopics");
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            check(d.partitions().size() == 1 && d.partitions().get(0).leader() != null, "describeTopics " + d);
            done.add("describe");
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(res)).all().get().get(res);
            check("86400000".equals(config.get("retention.ms").value()), "retention.ms " + config.get("retention.ms"));
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)))).all().get();
            waitUntil(() -> {
                try {
                    return "3600000".equals(admin.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value());
                } catch (Exception e) { return false; }
            }, "the altered retention.ms");
            done.add("configs");
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get();
            waitUntil(() -> {
                try { return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size() == 2; }
                catch (Exception e) { return false; }
            }, "2 partitions");
            done.add("partitions");
            DescribeClusterResult cluster = admin.describeCluster();
            check(!cluster.nodes().get().isEmpty() && cluster.controller().get() != null && cluster.clusterId().get() != null, "describeCluster");
            done.add("cluster");
            TopicPartition tp0 = new TopicPartition(topic, 0);
            try (KafkaProducer<String, String> p = producer(Map.of())) {
                for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, "k", "v" + i)).get();
            }
            long low = admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(2))).lowWatermarks().get(tp0).get().lowWatermark();
            check(low == 2, "deleteRecords low watermark " + low);
            ListOffsetsResult.ListOffsetsResultInfo earliest = admin.listOffsets(Map.of(tp0, OffsetSpec.earliest())).partitionResult(tp0).get();
            ListOffsetsResult.ListOffsetsResultInfo latest = admin.listOffsets(Map.of(tp0, OffsetSpec.latest())).partitionResult(tp0).get();
            check(earliest.offset() == 2 && latest.offset() == 5, "listOffsets " + earliest.offset() + ".." + latest.offset());
            done.add("records");
            String group = topic + "-group";
            try (KafkaConsumer<String, String> c = consumer(group, Map.of())) {
                c.assign(List.of(tp0));
                c.commitSync(Map.of(tp0, new OffsetAndMetadata(4, "meta")));
            }
            waitUntil(() -> {
                try { return admin.listConsumerGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group)); }
                catch (Exception e) { return false; }
            }, "the group in listConsumerGroups");
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(offsets.get(tp0).offset() == 4 && "meta".equals(offsets.get(tp0).metadata()), "group offsets " + offsets);
            ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            check(g.members().isEmpty() && "EMPTY".equalsIgnoreCase(String.valueOf(g.state())), "describeConsumerGroups " + g);
            admin.deleteConsumerGroups(List.of(group)).all().get();
            done.add("groups");
            admin.deleteTopics(List.of(topic)).all().get();
            waitUntil(() -> {
                try { return !admin.listTopics().names().get().contains(topic); }
                catch (Exception e) { return false; }
            }, "the deleted topic to leave listTopics");
            done.add("delete");
        }
        return String.join(",", done);
    }

    /** A transactional producer commits one transaction and aborts another (KIP-98). */
    private String transactions() throws Exception {
        String topic = prefix + "-txn";
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-txn-id",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000"))) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, "k", "committed-" + i));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, "k", "aborted-" + i));
            p.abortTransaction();
        }
        try (KafkaConsumer<String, String> c = consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            c.assign(List.of(new TopicPartition(topic, 0)));
            List<ConsumerRecord<String, String>> got = drain(c, 10);
            for (ConsumerRecords<String, String> more = c.poll(Duration.ofSeconds(1)); !more.isEmpty(); more = c.poll(Duration.ofSeconds(1)))
                for (ConsumerRecord<String, String> r : more) got.add(r);
            check(got.size() == 10 && got.stream().allMatch(r -> r.value().startsWith("committed-")), "read_committed saw " + got.size());
        }
        return "committed 10, aborted 5, read_committed saw 10";
    }

    /** A second producer with the same transactional id fences the first and aborts its open
     *  transaction; the first cannot commit; read_committed sees only the second's records. */
    private String transactionsFencing() throws Exception {
        String topic = prefix + "-fence";
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 2, Map.of());
        }
        Map<String, String> txn = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-fence-id",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        String fenced;
        try (KafkaProducer<String, String> zombie = producer(txn)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            for (int i = 0; i < 4; i++) zombie.send(new ProducerRecord<>(topic, i % 2, "k", "zombie-" + i)).get(60, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> fresh = producer(txn)) {
                fresh.initTransactions(); // fences the zombie, aborts its transaction
                fresh.beginTransaction();
                for (int i = 0; i < 4; i++) fresh.send(new ProducerRecord<>(topic, i % 2, "k", "fresh-" + i));
                fresh.commitTransaction();
            }
            try {
                zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-late"));
                zombie.commitTransaction();
                throw new AssertionError("the fenced producer committed");
            } catch (KafkaException e) {
                Throwable cause = e.getCause() != null && !(e.getClass().getSimpleName().contains("Fenced")
                        || e.getClass().getSimpleName().contains("InvalidProducerEpoch")) ? e.getCause() : e;
                fenced = cause.getClass().getSimpleName();
                check(fenced.contains("Fenced") || fenced.contains("InvalidProducerEpoch"), "the zombie got " + e);
            }
        }
        try (KafkaConsumer<String, String> c = consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            c.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            List<ConsumerRecord<String, String>> got = drain(c, 4);
            for (ConsumerRecords<String, String> more = c.poll(Duration.ofSeconds(1)); !more.isEmpty(); more = c.poll(Duration.ofSeconds(1)))
                for (ConsumerRecord<String, String> r : more) got.add(r);
            check(got.size() == 4 && got.stream().allMatch(r -> r.value().startsWith("fresh-")), "read_committed saw " + got.size());
        }
        try (KafkaConsumer<String, String> c = consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"))) {
            c.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            List<ConsumerRecord<String, String>> got = drain(c, 8);
            check(got.stream().filter(r -> r.value().startsWith("zombie-")).count() == 4, "read_uncommitted saw " + got.size());
        }
        return "the zombie was fenced (" + fenced + "), its transaction aborted; read_committed saw the 4 committed";
    }

    /** Consume-transform-produce with sendOffsetsToTransaction: the output and the group's
     *  offsets move together; an aborted round moves neither. */
    private String transactionsEos() throws Exception {
        String source = prefix + "-eos-in";
        String sink = prefix + "-eos-out";
        String group = prefix + "-eos-group";
        try (Admin admin = admin_()) {
            createTopic(admin, source, 2, Map.of());
            createTopic(admin, sink, 2, Map.of());
        }
        try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true"))) {
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(source, i % 2, "k" + i, "v" + i));
            p.flush();
        }
        Map<String, String> txn = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-eos-id",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        try (KafkaConsumer<String, String> c = consumer(group, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
             KafkaProducer<String, String> p = producer(txn)) {
            p.initTransactions();
            c.subscribe(List.of(source));
            List<ConsumerRecord<String, String>> batch = drain(c, 20);
            // an aborted round: nothing of it counts
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : batch) p.send(new ProducerRecord<>(sink, r.partition(), r.key(), "aborted-" + r.value()));
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<String, String> r : batch)
                offsets.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                        (a, b) -> a.offset() > b.offset() ? a : b);
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
            p.abortTransaction();
            try (Admin admin = admin_()) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
                check(committed.isEmpty(), "offsets after an abort: " + committed);
            }
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : batch) p.send(new ProducerRecord<>(sink, r.partition(), r.key(), "copy-" + r.value()));
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
            p.commitTransaction();
            try (Admin admin = admin_()) {
                waitUntil(() -> {
                    try {
                        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                                .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
                        return committed.equals(offsets);
                    } catch (Exception e) {
                        return false;
                    }
                }, "the transaction's offsets");
            }
        }
        try (KafkaConsumer<String, String> c = consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            c.assign(List.of(new TopicPartition(sink, 0), new TopicPartition(sink, 1)));
            List<ConsumerRecord<String, String>> got = drain(c, 20);
            for (ConsumerRecords<String, String> more = c.poll(Duration.ofSeconds(1)); !more.isEmpty(); more = c.poll(Duration.ofSeconds(1)))
                for (ConsumerRecord<String, String> r : more) got.add(r);
            Set<String> values = new TreeSet<>();
            for (ConsumerRecord<String, String> r : got) values.add(r.value());
            check(got.size() == 20 && values.size() == 20 && got.stream().allMatch(r -> r.value().startsWith("copy-")),
                    "read_committed saw " + got.size() + " (" + values.size() + " distinct)");
        }
        return "20 records copied once with their offsets; the aborted round left neither";
    }

    /** The consumer group protocol of KIP-848 (group.protocol=consumer). */
    private String consumerProtocol() throws Exception {
        String topic = prefix + "-kip848";
        try (Admin admin = admin_()) {
            createTopic(admin, topic, 2, Map.of());
        }
        try (KafkaProducer<String, String> p = producer(Map.of())) {
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
        }
        try (KafkaConsumer<String, String> c = consumer(topic + "-group", Map.of("group.protocol", "consumer"))) {
            c.subscribe(List.of(topic));
            drain(c, 10);
            c.commitSync();
        }
        return "a KIP-848 member consumed 10 and committed";
    }
}
