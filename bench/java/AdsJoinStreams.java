import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;

/**
 * The ad-attribution join of apps/ads/app.py on Kafka Streams, for bench/vs_kafka_streams.py:
 * impressions left-join clicks of the same auction within a minute after it (grace 5 s), each
 * value decoded from JSON into a record and the result encoded as JSON, as streamjoin's worker
 * does.
 *
 * <pre>
 *   java -cp JARS:CLASSES AdsJoinStreams --bootstrap HOST:PORT --prefix PREFIX --state-dir DIR
 *        [--until-records N] [--commit-interval-ms 5000] [--threads 1]
 * </pre>
 * Topics PREFIX-impressions, PREFIX-clicks -> PREFIX-attributed; application id PREFIX. With
 * --until-records it prints, once it has processed N input records, the line the benchmarks
 * read from every contender: {"event": "done", "t", "first", "records_in", "out", "cpu_s"}
 * (epoch seconds; CPU seconds of this JVM since the first record), and keeps running until
 * stopped.
 */
public final class AdsJoinStreams {
    private static final ObjectMapper JSON =
        new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /** apps/ads/data.py's Impression. */
    public record Impression(String auction_id, String campaign, String user_id, long timestamp_ms) {
    }

    /** apps/ads/data.py's Click. */
    public record Click(String auction_id, long timestamp_ms) {
    }

    /** apps/ads/app.py's Attributed. */
    public record Attributed(String auction_id, String campaign, boolean clicked, Long click_delay_ms) {
    }

    private AdsJoinStreams() {
    }

    static <T> Serde<T> json(final Class<T> type) {
        final Serializer<T> serializer = (topic, value) -> {
            try {
                return value == null ? null : JSON.writeValueAsBytes(value);
            } catch (final Exception e) {
                throw new IllegalStateException(e);
            }
        };
        final Deserializer<T> deserializer = (topic, bytes) -> {
            try {
                return bytes == null ? null : JSON.readValue(bytes, type);
            } catch (final Exception e) {
                throw new IllegalStateException(e);
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }

    static double cpuSeconds() {
        final var os = ManagementFactory.getOperatingSystemMXBean();
        return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
    }

    public static void main(final String[] args) throws Exception {
        final Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i], args[i + 1]);
        }
        final String prefix = options.get("--prefix");
        final long until = Long.parseLong(options.getOrDefault("--until-records", "0"));

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, prefix);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.get("--bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, options.get("--state-dir"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, options.getOrDefault("--commit-interval-ms", "5000"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, options.getOrDefault("--threads", "1"));
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        final AtomicLong seen = new AtomicLong();
        final AtomicLong out = new AtomicLong();
        final double[] first = {0, 0};
        final Serde<String> keys = Serdes.String();

        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, Impression> impressions = builder
            .stream(prefix + "-impressions", Consumed.with(keys, json(Impression.class)));
        final KStream<String, Click> clicks = builder
            .stream(prefix + "-clicks", Consumed.with(keys, json(Click.class)));
        final Runnable counted = () -> {
            final long n = seen.incrementAndGet();
            if (n == 1) {
                first[0] = System.currentTimeMillis() / 1000.0;
                first[1] = cpuSeconds();
            }
            if (n == until) {
                final double now = System.currentTimeMillis() / 1000.0;
                System.out.printf(
                    "{\"event\": \"done\", \"t\": %.3f, \"first\": %.3f, \"records_in\": %d, "
                        + "\"out\": %d, \"cpu_s\": %.3f}%n",
                    now, first[0], n, out.get(), cpuSeconds() - first[1]);
                System.out.flush();
            }
        };
        impressions
            .peek((k, v) -> counted.run())
            .leftJoin(
                clicks.peek((k, v) -> counted.run()),
                (impression, click) -> new Attributed(
                    impression.auction_id(),
                    impression.campaign(),
                    click != null,
                    click == null ? null : click.timestamp_ms() - impression.timestamp_ms()),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(5))
                    .before(Duration.ZERO),
                StreamJoined.with(keys, json(Impression.class), json(Click.class)))
            .peek((k, v) -> out.incrementAndGet())
            .to(prefix + "-attributed", Produced.with(keys, json(Attributed.class)));

        final KafkaStreams streams = new KafkaStreams(builder.build(), props);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(30))));
        streams.start();
        new CountDownLatch(1).await();
    }
}
