import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs join scenarios through Kafka Streams' own TopologyTestDriver, one JVM for a whole batch.
 *
 * <p>Line protocol on stdin, one scenario after another (tokens never contain spaces; "-" is a
 * null key or value):
 * <pre>
 *   scenario family=ss how=left before=3 after=2 grace=10 idle=0 rekey=0 history=0
 *   pipe TOPIC KEY VALUE TIMESTAMP
 *   wall MILLIS                       (advance the driver's wall clock)
 *   end
 * </pre>
 * For each scenario it prints every record written to the topics "out" and "mid", in the order
 * written per topic, as "out TOPIC KEY VALUE TIMESTAMP", then "end" (or "error MESSAGE", "end").
 *
 * <p>Families: ss (stream-stream), st (stream-table), vst (stream-versioned table), tt
 * (table-table), fk (foreign-key table-table), gt (stream-global table), chain (a stream-stream
 * join into "mid", joined with the table "third" by a left join into "out"). rekey=1 re-keys the
 * left stream by its value's foreign key (ss, st). Values are "FK:NAME" or "NAME"; the foreign key
 * (fk, gt, rekey) is the part before ':', none without one. The joiner writes "LEFT+RIGHT", "_"
 * for a missing side.
 */
public final class JoinHarness {
    private static final ValueJoiner<String, String, String> JOINER =
        (left, right) -> (left == null ? "_" : left) + "+" + (right == null ? "_" : right);

    private JoinHarness() {
    }

    static String foreignKey(final String value) {
        if (value == null) {
            return null;
        }
        final int colon = value.indexOf(':');
        return colon <= 0 ? null : value.substring(0, colon);
    }

    static Map<String, String> parameters(final String line) {
        final Map<String, String> found = new HashMap<>();
        for (final String token : line.trim().split(" ")) {
            final int eq = token.indexOf('=');
            if (eq > 0) {
                found.put(token.substring(0, eq), token.substring(eq + 1));
            }
        }
        return found;
    }

    static long number(final Map<String, String> params, final String name) {
        return Long.parseLong(params.getOrDefault(name, "0"));
    }

    static JoinWindows windows(final Map<String, String> params) {
        return JoinWindows.ofTimeDifferenceAndGrace(Duration.ZERO, Duration.ofMillis(number(params, "grace")))
            .after(Duration.ofMillis(number(params, "after")))
            .before(Duration.ofMillis(number(params, "before")));
    }

    static KStream<String, String> streamJoin(
        final KStream<String, String> left,
        final KStream<String, String> right,
        final String how,
        final JoinWindows windows
    ) {
        switch (how) {
            case "inner":
                return left.join(right, JOINER, windows);
            case "left":
                return left.leftJoin(right, JOINER, windows);
            default:
                return left.outerJoin(right, JOINER, windows);
        }
    }

    static KStream<String, String> stream(final StreamsBuilder builder, final String topic, final boolean rekey) {
        final KStream<String, String> stream = builder.stream(topic);
        return rekey ? stream.selectKey((key, value) -> foreignKey(value)) : stream;
    }

    static KStream<String, String> streamTable(
        final KStream<String, String> stream, final KTable<String, String> table, final String how
    ) {
        return how.equals("inner") ? stream.join(table, JOINER) : stream.leftJoin(table, JOINER);
    }

    static void build(final StreamsBuilder builder, final Map<String, String> params) {
        final String family = params.get("family");
        final String how = params.getOrDefault("how", "inner");
        final boolean rekey = "1".equals(params.get("rekey"));
        switch (family) {
            case "ss":
                streamJoin(stream(builder, "left", rekey), builder.stream("right"), how, windows(params)).to("out");
                break;
            case "st":
                streamTable(stream(builder, "left", rekey), builder.table("right"), how).to("out");
                break;
            case "vst": {
                final KTable<String, String> versioned = builder.table(
                    "right",
                    Materialized.as(Stores.persistentVersionedKeyValueStore(
                        "versioned", Duration.ofMillis(number(params, "history"))))
                );
                streamTable(builder.stream("left"), versioned, how).to("out");
                break;
            }
            case "tt": {
                final KTable<String, String> left = builder.table("left");
                final KTable<String, String> right = builder.table("right");
                final KTable<String, String> joined;
                if (how.equals("inner")) {
                    joined = left.join(right, JOINER);
                } else if (how.equals("left")) {
                    joined = left.leftJoin(right, JOINER);
                } else {
                    joined = left.outerJoin(right, JOINER);
                }
                joined.toStream().to("out");
                break;
            }
            case "fk": {
                final KTable<String, String> left = builder.table("left");
                final KTable<String, String> right = builder.table("right");
                final KTable<String, String> joined = how.equals("inner")
                    ? left.join(right, JoinHarness::foreignKey, JOINER)
                    : left.leftJoin(right, JoinHarness::foreignKey, JOINER);
                joined.toStream().to("out");
                break;
            }
            case "gt": {
                final GlobalKTable<String, String> table = builder.globalTable("right");
                final KStream<String, String> stream = builder.stream("left");
                final KStream<String, String> joined = how.equals("inner")
                    ? stream.join(table, (key, value) -> foreignKey(value), JOINER)
                    : stream.leftJoin(table, (key, value) -> foreignKey(value), JOINER);
                joined.to("out");
                break;
            }
            case "chain": {
                streamJoin(builder.stream("left"), builder.stream("right"), how, windows(params)).to("mid");
                streamTable(builder.stream("mid"), builder.table("third"), "left").to("out");
                break;
            }
            default:
                throw new IllegalArgumentException("unknown family " + family);
        }
    }

    static Properties config(final Map<String, String> params) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "differential");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, number(params, "idle"));
        // Left/outer non-matches are emitted when their time comes, not throttled by wall-clock
        // time (which the test driver's clock does not move): Kafka Streams' own tests do this.
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        props.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/join-harness");
        return props;
    }

    static String token(final String text) {
        return text == null ? "-" : text;
    }

    static String nullable(final String text) {
        return "-".equals(text) ? null : text;
    }

    static void run(final Map<String, String> params, final List<String[]> steps, final PrintStream out) {
        final StreamsBuilder builder = new StreamsBuilder();
        build(builder, params);
        final StringSerializer serializer = new StringSerializer();
        final StringDeserializer deserializer = new StringDeserializer();
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), config(params), Instant.ofEpochMilli(0))) {
            final Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
            for (final String[] step : steps) {
                if (step[0].equals("wall")) {
                    driver.advanceWallClockTime(Duration.ofMillis(Long.parseLong(step[1])));
                    continue;
                }
                final TestInputTopic<String, String> input = inputs.computeIfAbsent(
                    step[1], topic -> driver.createInputTopic(topic, serializer, serializer));
                input.pipeInput(new TestRecord<>(nullable(step[2]), nullable(step[3]), Instant.ofEpochMilli(Long.parseLong(step[4]))));
            }
            final List<String> lines = new ArrayList<>();
            for (final String topic : new String[] {"mid", "out"}) {
                if (!driver.producedTopicNames().contains(topic)) {
                    continue;
                }
                final TestOutputTopic<String, String> output = driver.createOutputTopic(topic, deserializer, deserializer);
                for (final TestRecord<String, String> record : output.readRecordsToList()) {
                    lines.add("out " + topic + " " + token(record.key()) + " " + token(record.value()) + " " + record.timestamp());
                }
            }
            lines.forEach(out::println);
        }
    }

    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        Map<String, String> params = null;
        List<String[]> steps = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("scenario ")) {
                params = parameters(line.substring("scenario ".length()));
                steps = new ArrayList<>();
            } else if (line.equals("end")) {
                try {
                    run(params, steps, out);
                } catch (final RuntimeException error) {
                    out.println("error " + String.valueOf(error).replace('\n', ' '));
                }
                out.println("end");
                out.flush();
            } else if (!line.isBlank()) {
                steps.add(line.split(" "));
            }
        }
    }
}
