// The consumer group protocol of KIP-848 (group.protocol=consumer) as the 4.x Java client speaks
// it: compiled only against a 4.x kafka-clients (SubscriptionPattern, GroupState and the
// ConsumerGroupDescribe fields of the admin client are 4.0 API). ClientScenarios loads this class
// by name for the scenarios named "kip848-*".

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

final class Kip848Scenarios implements ClientScenarios.Scenarios {
    private static final int PARTITIONS = 6;
    private static final int RECORDS = 3000;
    private static final Map<String, String> KIP848 = Map.of("group.protocol", "consumer",
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");

    private final ClientScenarios s;
    /** What kip848-describe reports: the describeConsumerGroups check kip848-rebalance ran. */
    private String described;
    private Throwable describeFailure;

    Kip848Scenarios(ClientScenarios s) {
        this.s = s;
    }

    @Override
    public String run(String name) throws Exception {
        switch (name) {
            case "kip848-rebalance": return rebalance();
            case "kip848-describe":
                if (describeFailure != null) throw new AssertionError("describeConsumerGroups: " + describeFailure, describeFailure);
                if (described == null) throw new AssertionError("kip848-rebalance did not reach its describeConsumerGroups check");
                return described;
            case "kip848-regex": return regex();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // --- kip848-rebalance (and kip848-describe) ----------------------------------------------

    /** One line of the shared log: what a member did (assigned, revoked, lost, record). */
    private record Event(long nanos, String member, String kind, int partition, long offset, String value) {
        @Override
        public String toString() {
            return String.format("%.3f %s %s p%d%s", nanos / 1e9, member, kind, partition,
                    kind.equals("record") ? " @" + offset + "=" + value : "");
        }
    }

    /** The log's order is the order things happened in: events are appended under its lock. */
    private final List<Event> log = new ArrayList<>();
    /** The offset each partition's owners committed last (after their commitSync returned). */
    private final Map<Integer, Long> committed = new ConcurrentHashMap<>();
    private final List<String> problems = Collections.synchronizedList(new ArrayList<>());
    /** Commits the coordinator refused (CommitFailedException), with the partitions. */
    private final List<String> refused = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger processed = new AtomicInteger();

    private void event(String member, String kind, int partition, long offset, String value) {
        synchronized (log) {
            log.add(new Event(System.nanoTime(), member, kind, partition, offset, value));
        }
    }

    /** A consumer in its own thread: poll, log every record, commitSync what it processed. */
    private final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final String topic;
        final String group;
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        /** partition: the offset its first record must have (the committed one), until it comes */
        final Map<Integer, Long> expectedStart = new HashMap<>();
        final Thread thread;
        volatile boolean stop;
        volatile String memberId = "";
        volatile Throwable error;

        Member(String name, String topic, String group) {
            this.name = name;
            this.topic = topic;
            this.group = group;
            this.thread = new Thread(this, name);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> c = s.consumer(group, KIP848)) {
                c.subscribe(List.of(topic), this);
                while (!stop) {
                    ConsumerRecords<String, String> records = c.poll(ClientScenarios.POLL);
                    memberId = c.groupMetadata().memberId();
                    if (records.isEmpty()) continue;
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        event(name, "record", r.partition(), r.offset(), r.value());
                        Long start = expectedStart.remove(r.partition());
                        if (start != null && r.offset() != start)
                            problems.add(name + " took p" + r.partition() + " at offset " + r.offset() + ", committed " + start);
                        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        processed.incrementAndGet();
                    }
                    try {
                        c.commitSync(offsets);
                        offsets.forEach((tp, o) -> committed.merge(tp.partition(), o.offset(), Math::max));
                    } catch (CommitFailedException e) {
                        // A commit sent with the member epoch the client knew while its
                        // heartbeat acknowledging a revocation moved it on: refused
                        // (STALE_MEMBER_EPOCH) before KIP-1251's assignment epochs, taken since.
                        // Logged and counted as a problem; the member goes on.
                        refused.add(name + " " + offsets.keySet().stream().map(TopicPartition::partition).sorted().toList()
                                + ": " + e.getMessage());
                    }
                }
            } catch (Throwable e) {
                error = e;
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) {
                event(name, "assigned", tp.partition(), -1, null);
                expectedStart.put(tp.partition(), committed.getOrDefault(tp.partition(), 0L));
                owned.add(tp.partition());
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) {
                owned.remove(tp.partition());
                expectedStart.remove(tp.partition());
                event(name, "revoked", tp.partition(), -1, null);
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) {
                owned.remove(tp.partition());
                expectedStart.remove(tp.partition());
                event(name, "lost", tp.partition(), -1, null);
            }
        }

        void close() throws InterruptedException {
            stop = true;
            thread.join(ClientScenarios.WAIT_MS);
            ClientScenarios.check(!thread.isAlive(), name + " did not close");
            if (error != null) throw new AssertionError(name + ": " + error, error);
        }
    }

    /** The members each own some partitions and, together, each partition once. */
    private static boolean balanced(List<Member> members) {
        Set<Integer> all = new HashSet<>();
        int total = 0;
        for (Member m : members) {
            if (m.error != null) throw new AssertionError(m.name + " failed: " + m.error, m.error);
            if (m.owned.isEmpty()) return false;
            all.addAll(m.owned);
            total += m.owned.size();
        }
        return all.size() == PARTITIONS && total == PARTITIONS;
    }

    private void produce(KafkaProducer<String, String> p, String topic, int from, int to) throws Exception {
        List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
        for (int i = from; i < to; i++) acks.add(p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, String.valueOf(i))));
        // bounded by the producer's own delivery.timeout.ms (2 min), whose expiry names the
        // partition and how long its batch waited
        for (java.util.concurrent.Future<?> f : acks) f.get();
    }

    /** Three members consume a 6-partition topic; one leaves cleanly mid-way, a fourth joins;
     *  every record is processed once, no partition has two owners at once, and every new owner
     *  starts at the offset the previous one committed. */
    private String rebalance() throws Exception {
        long started = System.nanoTime();
        String topic = s.prefix + "-kip848-members";
        String group = topic + "-group";
        Member c1, c2, c3, c4;
        List<Member> everyone = new ArrayList<>();
        try (Admin admin = s.admin_(); KafkaProducer<String, String> p = s.producer(Map.of())) {
            s.createTopic(admin, topic, PARTITIONS, Map.of());
            c1 = new Member("c1", topic, group);
            c2 = new Member("c2", topic, group);
            c3 = new Member("c3", topic, group);
            everyone.addAll(List.of(c1, c2, c3));
            produce(p, topic, 0, RECORDS / 3);
            ClientScenarios.waitUntil(() -> balanced(List.of(c1, c2, c3)), "three members sharing the 6 partitions");
            describe(admin, group, List.of(c1, c2, c3));
            c1.close();
            produce(p, topic, RECORDS / 3, 2 * RECORDS / 3);
            ClientScenarios.waitUntil(() -> balanced(List.of(c2, c3)), "c2 and c3 taking c1's partitions");
            c4 = new Member("c4", topic, group);
            everyone.add(c4);
            produce(p, topic, 2 * RECORDS / 3, RECORDS);
            ClientScenarios.waitUntil(() -> balanced(List.of(c2, c3, c4)), "c4 taking partitions from c2 and c3");
            ClientScenarios.waitUntil(() -> balanced(List.of(c2, c3, c4)) && processed.get() >= RECORDS
                    && committed.values().stream().mapToLong(Long::longValue).sum() >= RECORDS, "every record processed and committed");
            for (Member m : List.of(c2, c3, c4)) m.close();
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            for (int i = 0; i < PARTITIONS; i++) {
                OffsetAndMetadata o = offsets.get(new TopicPartition(topic, i));
                ClientScenarios.check(o != null && o.offset() == RECORDS / PARTITIONS, "the group's offset of p" + i + ": " + o);
            }
        } finally {
            for (Member m : everyone) m.stop = true;
        }
        return check(List.of(c1, c2, c3, c4), started);
    }

    /** Admin.describeConsumerGroups (ConsumerGroupDescribe) while the three members consume. */
    private void describe(Admin admin, String group, List<Member> members) {
        try {
            ConsumerGroupDescription[] last = new ConsumerGroupDescription[1];
            try {
                ClientScenarios.waitUntil(() -> {
                    try {
                        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
                        last[0] = d;
                        if (d.type() != GroupType.CONSUMER || d.groupState() != GroupState.STABLE || d.members().size() != members.size())
                            return false;
                        Map<String, Set<Integer>> byId = new HashMap<>();
                        for (MemberDescription m : d.members()) {
                            Set<Integer> parts = new TreeSet<>();
                            for (TopicPartition tp : m.assignment().topicPartitions()) parts.add(tp.partition());
                            Set<Integer> target = new TreeSet<>();
                            for (TopicPartition tp : m.targetAssignment().orElseThrow().topicPartitions()) target.add(tp.partition());
                            if (!parts.equals(target)) return false;
                            byId.put(m.consumerId(), parts);
                        }
                        for (Member m : members)
                            if (!new TreeSet<>(m.owned).equals(byId.get(m.memberId))) return false;
                        return true;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "a STABLE consumer group whose members' assignments are what the members own");
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; last described: " + last[0]);
            }
            ConsumerGroupDescription d = last[0];
            ClientScenarios.check(d.groupEpoch().isPresent() && d.targetAssignmentEpoch().equals(d.groupEpoch()),
                    "epochs " + d.groupEpoch() + "/" + d.targetAssignmentEpoch());
            for (MemberDescription m : d.members())
                ClientScenarios.check(m.memberEpoch().equals(d.groupEpoch()) && m.upgraded().equals(java.util.Optional.of(true)),
                        "member " + m);
            Map<String, Set<Integer>> shown = new TreeMap<>();
            for (Member m : members) shown.put(m.name, new TreeSet<>(m.owned));
            described = "type " + d.type() + ", state " + d.groupState() + ", assignor " + d.partitionAssignor()
                    + ", epoch " + d.groupEpoch().get() + ", members " + shown;
        } catch (Throwable e) {
            describeFailure = e;
        }
    }

    /** Reads the log: every record once, one owner per partition at a time, records processed
     *  only by their partition's owner, every new owner starting at the committed offset. */
    private String check(List<Member> members, long started) {
        List<Event> events;
        synchronized (log) {
            events = new ArrayList<>(log);
        }
        Map<Integer, String> owner = new HashMap<>();
        Map<String, Integer> seen = new HashMap<>();
        Map<String, Set<Integer>> took = new TreeMap<>();
        int handovers = 0;
        List<String> bad = new ArrayList<>(problems);
        for (Event e : events) {
            String current = owner.get(e.partition());
            switch (e.kind()) {
                case "assigned":
                    if (current != null) bad.add("two owners of p" + e.partition() + ": " + current + " and " + e);
                    if (owner.containsKey(-1 - e.partition())) handovers++;
                    owner.put(e.partition(), e.member());
                    owner.put(-1 - e.partition(), e.member()); // it has had an owner
                    took.computeIfAbsent(e.member(), k -> new TreeSet<>()).add(e.partition());
                    break;
                case "revoked":
                case "lost":
                    if (!e.member().equals(current)) bad.add(e + " not owned by " + e.member());
                    else owner.remove(e.partition());
                    if (e.kind().equals("lost")) bad.add(e.toString());
                    break;
                default:
                    if (!e.member().equals(current)) bad.add(e + " while " + current + " owned it");
                    seen.merge(e.value(), 1, Integer::sum);
            }
        }
        for (Member m : members) {
            if (!m.owned.isEmpty()) bad.add(m.name + " closed still owning " + m.owned);
        }
        int twice = 0;
        for (int i = 0; i < RECORDS; i++) {
            int n = seen.getOrDefault(String.valueOf(i), 0);
            if (n == 0) bad.add("record " + i + " never processed");
            if (n > 1) twice++;
        }
        if (twice > 0) bad.add(twice + " records processed more than once");
        if (!refused.isEmpty()) bad.add(refused.size() + " commits refused, the first " + refused.get(0));
        ClientScenarios.check(took.containsKey("c4"), "c4 never got a partition");
        if (!bad.isEmpty()) {
            StringBuilder b = new StringBuilder();
            for (Event e : events) if (!e.kind().equals("record")) b.append(e).append("; ");
            throw new AssertionError(bad.size() + " problems: " + bad.subList(0, Math.min(10, bad.size()))
                    + "; the rebalance log: " + b);
        }
        return RECORDS + " records over " + PARTITIONS + " partitions each processed once, every commit taken; c1 left, c4 joined; "
                + handovers + " handovers, never two owners, each new owner started at the committed offset; took "
                + took + String.format(" (%.1f s)", (System.nanoTime() - started) / 1e9);
    }

    // --- kip848-regex ----------------------------------------------------------------------

    /** A broker-side regex subscription (KIP-848's SubscribedTopicRegex) picks up a topic created
     *  after the member joined. */
    private String regex() throws Exception {
        long started = System.nanoTime();
        String pattern = s.prefix + "-re-.*";
        String topic = s.prefix + "-re-late";
        try (KafkaConsumer<String, String> c = s.consumer(s.prefix + "-re-group", Map.of("group.protocol", "consumer"));
             Admin admin = s.admin_()) {
            c.subscribe(new SubscriptionPattern(pattern));
            ClientScenarios.waitUntil(() -> {
                c.poll(ClientScenarios.POLL);
                return c.groupMetadata().generationId() > 0;
            }, "the member to join");
            ClientScenarios.check(c.assignment().isEmpty(), "assigned before the topic exists: " + c.assignment());
            s.createTopic(admin, topic, 2, Map.of());
            try (KafkaProducer<String, String> p = s.producer(Map.of())) {
                for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, i % 2, null, "late-" + i));
                p.flush();
            }
            List<ConsumerRecord<String, String>> got = s.drain(c, 20);
            Set<String> values = new HashSet<>();
            for (ConsumerRecord<String, String> r : got) {
                ClientScenarios.check(r.topic().equals(topic), "a record of " + r.topic());
                values.add(r.value());
            }
            ClientScenarios.check(values.size() == 20, "distinct values " + values.size());
            ClientScenarios.check(c.assignment().equals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1))),
                    "assignment " + c.assignment());
            c.commitSync();
        }
        return String.format("%s matched %s created after the join; 20 records consumed (%.1f s)", pattern, topic,
                (System.nanoTime() - started) / 1e9);
    }
}
