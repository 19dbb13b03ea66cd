// Kafka's own Java consumer with the CooperativeStickyAssignor, for the interop test
// (tests/group/test_java_interop.py). Arguments: bootstrap topic group member-name.
// It prints one line per event, with the wall clock in ms: "<ms> assigned|revoked|lost <p,...>",
// "<ms> leader" when it computes the group's assignment, "<ms> record <p> <offset> <value>",
// and exits, after closing the consumer (leaving the group), when its standard input closes.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class CooperativeMember {
    static synchronized void say(String event) {
        System.out.println(System.currentTimeMillis() + " " + event);
    }

    static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).sorted()
            .collect(Collectors.joining(","));
    }

    /** The stock assignor, saying when this member leads (computes the assignment). */
    public static class LeaderReporting extends CooperativeStickyAssignor {
        @Override
        public GroupAssignment assign(Cluster metadata, GroupSubscription subscriptions) {
            say("leader");
            return super.assign(metadata, subscriptions);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args[3]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
            LeaderReporting.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        Thread stopper = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception ignored) { }
            consumer.wakeup();
        });
        stopper.setDaemon(true);
        stopper.start();
        consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                consumer.commitSync();  // what was processed stays processed
                say("revoked " + partitions(tps));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                say("assigned " + partitions(tps));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                say("lost " + partitions(tps));
            }
        });
        try {
            while (true) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    say("record " + r.partition() + " " + r.offset() + " " + r.value());
                }
                try {
                    consumer.commitSync();
                } catch (RebalanceInProgressException | CommitFailedException retried) {
                    // The next poll completes the rebalance; onPartitionsRevoked commits what moves.
                }
            }
        } catch (WakeupException stopping) {
            consumer.commitSync();
        } finally {
            consumer.close();
            say("closed");
        }
    }
}
