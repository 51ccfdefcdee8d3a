import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The produce part of bench/bench_transactions.py with Kafka's Java producer: runs of an
 * idempotent producer and of a transactional one (commits every {@code txnSize} records),
 * alternating, each to a topic of its own with one partition, 100 B values without keys, the
 * producer's defaults otherwise (linger.ms 5, batch.size 16384 in the 4.x client). Set-up is
 * outside the clock (the producer, its producer id, one acknowledged warm-up record, in a
 * transaction of its own for the transactional producer); the clock runs from the first
 * send() until every record is acknowledged (flush() returned, or the last
 * commitTransaction()). One line per run: {@code RESULT <kind> <run> <records/s>}.
 *
 * <p>Arguments: bootstrap, topic prefix, records per run, runs of each kind, records per
 * transaction, and "warm" for one unprinted run of each kind first (the JIT).
 */
public final class TxnProduce {
    private static final byte[] VALUE = new byte[100];

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        int records = Integer.parseInt(args[2]);
        int runs = Integer.parseInt(args[3]);
        int txnSize = Integer.parseInt(args[4]);
        boolean warm = args.length > 5 && args[5].equals("warm");
        if (warm) {
            run(bootstrap, prefix + "-warm-idem", records / 2, 0, prefix + "-warm");
            run(bootstrap, prefix + "-warm-txn", records / 2, txnSize, prefix + "-warm");
        }
        for (int r = 0; r < runs; r++) {
            double idem = run(bootstrap, prefix + "-idem-" + r, records, 0, null);
            System.out.printf("RESULT idempotent %d %.0f%n", r, idem);
            double txn = run(bootstrap, prefix + "-txn-" + r, records, txnSize, prefix + "-txn-" + r);
            System.out.printf("RESULT transactional %d %.0f%n", r, txn);
            System.out.flush();
        }
    }

    /** Records/s of one run; {@code txnSize} 0: idempotent. */
    private static double run(String bootstrap, String topic, int records, int txnSize, String txnId)
            throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        boolean transactional = txnSize > 0;
        if (transactional) props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId + "-" + topic);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, 0, null, VALUE);
            if (transactional) {
                p.initTransactions();
                p.beginTransaction();
            }
            Future<RecordMetadata> warmUp = p.send(record);
            if (transactional) p.commitTransaction(); else warmUp.get();
            long started = System.nanoTime();
            for (int i = 0; i < records; i++) {
                if (transactional && i % txnSize == 0) p.beginTransaction();
                p.send(record);
                if (transactional && (i + 1) % txnSize == 0) p.commitTransaction();
            }
            if (!transactional) p.flush();
            double seconds = (System.nanoTime() - started) / 1e9;
            p.close(Duration.ofSeconds(30));
            return records / seconds;
        }
    }
}
