// Apache Kafka's own sticky and cooperative-sticky assignors, served to streamjoin's assignor
// bench (bench/assignors.py) and differential tests (tests/assignment/) through one JVM, so
// that Java's figures come warm (every request runs warm-up calls first, and the JIT stays warm
// across requests) and from the same run as streamjoin's. Driven by bench/kafka_assignors.py.
//
// Requests and responses are lines of space-separated words on stdin and stdout. Topics are
// named once per request and then referred to by their index; a pair "t p" is partition p of
// topic t. A request:
//   assign <sticky|cooperative-sticky> <warm-up calls> <timed calls>
//   topics <n> <name> <partitions> ...
//   member <id> <generation> <n> <topic> ... <m> <t> <p> ...   (one per member: its topics, then
//                                                             what it owned, of that generation)
//   end
// The response: "times <k> <wall ns> <cpu ns> <encode wall ns> <encode cpu ns> ..." for the
// timed calls (CPU time of the whole JVM, so collections and compilations a call causes are in
// it, see cpuNanos; encode: every member's assignment serialized for SyncGroup, as the leader
// sends it, with ConsumerProtocol.serializeAssignment), then per member
// "member <id> <n> <t> <p> ..." with what it ends up with (for cooperative-sticky: after the
// follow-up rebalance hands over the partitions withheld now), then "end". A request that
// fails gets "error <message>" and "end".
//
// Each member's subscription is made the way a Java consumer makes it: the member-side assignor
// is told its previous assignment and generation (onAssignment) and writes the user data
// (subscriptionUserData); EAGER (sticky) members report no owned partitions, COOPERATIVE ones
// report them with their generation (consumer protocol v3). Only assignPartitions is timed; the
// partition metadata and subscriptions are built before each call, as the consumer has them.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public final class KafkaAssignors {
    private static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final Path TASKS = Path.of("/proc/self/task");

    /**
     * CPU time of the whole JVM in ns: the sum over its threads (the collector's and the
     * compiler's too) of Linux's per-thread run time, as getProcessCpuTime counts in 10 ms ticks
     * here; that where /proc has no schedstat.
     */
    static long cpuNanos() {
        if (!Files.isDirectory(TASKS)) {
            return OS.getProcessCpuTime();
        }
        long sum = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                try {
                    String stat = Files.readString(task.resolve("schedstat"));
                    sum += Long.parseLong(stat.substring(0, stat.indexOf(' ')));
                } catch (IOException | RuntimeException gone) {
                    // a thread that ended between the listing and the read
                }
            }
        } catch (IOException e) {
            return OS.getProcessCpuTime();
        }
        return sum;
    }

    /** CooperativeStickyAssignor's own reading of a subscription, for `Target`. */
    static final class CooperativeMemberData extends CooperativeStickyAssignor {
        MemberData read(Subscription subscription) {
            return memberData(subscription);
        }
    }

    /**
     * What CooperativeStickyAssignor computes before it withholds the partitions that change
     * owner (its assignPartitions is this class's, then it removes those): the group's target.
     */
    static final class Target extends AbstractStickyAssignor {
        private final CooperativeMemberData reader = new CooperativeMemberData();

        @Override
        protected MemberData memberData(Subscription subscription) {
            return reader.read(subscription);
        }

        @Override
        public String name() {
            return "cooperative-sticky-target";
        }
    }

    /** One member as the request describes it. */
    record Member(String id, int generation, List<String> topics, List<TopicPartition> owned) {}

    /** A parsed request. */
    record Request(
        String assignor,
        int warmUps,
        int timed,
        String[] topicNames,
        Map<String, List<PartitionInfo>> partitions,
        List<Member> members) {}

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        BufferedWriter out = new BufferedWriter(
            new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 20);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            StringBuilder response = new StringBuilder();
            try {
                Request request = read(line, in);
                serve(request, response);
            } catch (RuntimeException e) {
                skipToEnd(line, in);
                response.setLength(0);
                response.append("error ").append(String.valueOf(e).replace('\n', ' ')).append('\n');
            }
            out.append(response).append("end\n");
            out.flush();
        }
    }

    private static void skipToEnd(String first, BufferedReader in) throws IOException {
        String line = first;
        while (line != null && !line.equals("end")) {
            line = in.readLine();
        }
    }

    private static Request read(String header, BufferedReader in) throws IOException {
        String[] words = header.split(" ");
        if (words.length != 4 || !words[0].equals("assign")) {
            throw new IllegalArgumentException("expected 'assign <assignor> <warm-ups> <timed>', got: " + header);
        }
        String[] topicLine = in.readLine().split(" ");
        int topicCount = Integer.parseInt(topicLine[1]);
        String[] names = new String[topicCount];
        Map<String, List<PartitionInfo>> partitions = new HashMap<>();
        Node[] none = new Node[0];
        for (int t = 0; t < topicCount; t++) {
            names[t] = topicLine[2 + 2 * t];
            int count = Integer.parseInt(topicLine[3 + 2 * t]);
            List<PartitionInfo> infos = new ArrayList<>(count);
            for (int p = 0; p < count; p++) {
                infos.add(new PartitionInfo(names[t], p, null, none, none));
            }
            partitions.put(names[t], infos);
        }
        List<Member> members = new ArrayList<>();
        String line;
        while (!(line = in.readLine()).equals("end")) {
            String[] m = line.split(" ");
            int at = 3;
            int subscribed = Integer.parseInt(m[at++]);
            List<String> topics = new ArrayList<>(subscribed);
            for (int i = 0; i < subscribed; i++) {
                topics.add(names[Integer.parseInt(m[at++])]);
            }
            int ownedCount = Integer.parseInt(m[at++]);
            List<TopicPartition> owned = new ArrayList<>(ownedCount);
            for (int i = 0; i < ownedCount; i++) {
                String topic = names[Integer.parseInt(m[at++])];
                owned.add(new TopicPartition(topic, Integer.parseInt(m[at++])));
            }
            members.add(new Member(m[1], Integer.parseInt(m[2]), topics, owned));
        }
        return new Request(words[1], Integer.parseInt(words[2]), Integer.parseInt(words[3]),
            names, partitions, members);
    }

    private static AbstractPartitionAssignor assignor(String name) {
        return switch (name) {
            case "sticky" -> new StickyAssignor();
            case "cooperative-sticky" -> new CooperativeStickyAssignor();
            default -> throw new IllegalArgumentException("unknown assignor " + name);
        };
    }

    /** Per member, the subscription a Java consumer of that assignor would send. */
    @SuppressWarnings("removal") // ConsumerGroupMetadata's constructor: what the consumer calls
    private static Map<String, Subscription> subscriptions(String name, List<Member> members) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (Member member : members) {
            ConsumerPartitionAssignor side = assignor(name);
            if (member.generation() >= 0) {
                side.onAssignment(new Assignment(member.owned()),
                    new ConsumerGroupMetadata("bench", member.generation(), member.id(), Optional.empty()));
            }
            ByteBuffer userData = side.subscriptionUserData(new HashSet<>(member.topics()));
            Subscription subscription = name.equals("sticky")
                ? new Subscription(member.topics(), userData)
                : new Subscription(member.topics(), userData, member.owned(), member.generation(),
                    Optional.empty());
            subscriptions.put(member.id(), subscription);
        }
        return subscriptions;
    }

    /** Only the topics somebody subscribes to, as the consumer's leader gives them. */
    private static Map<String, List<PartitionInfo>> subscribedPartitions(Request request) {
        Set<String> subscribed = new HashSet<>();
        for (Member member : request.members()) {
            subscribed.addAll(member.topics());
        }
        Map<String, List<PartitionInfo>> partitions = new HashMap<>();
        for (String topic : subscribed) {
            List<PartitionInfo> infos = request.partitions().get(topic);
            if (infos != null && !infos.isEmpty()) {
                partitions.put(topic, new ArrayList<>(infos));
            }
        }
        return partitions;
    }

    private static void serve(Request request, StringBuilder response) {
        Map<String, List<TopicPartition>> result = null;
        long[] times = new long[4 * request.timed()];
        for (int call = 0; call < request.warmUps() + request.timed(); call++) {
            AbstractPartitionAssignor assignor = assignor(request.assignor());
            Map<String, List<PartitionInfo>> partitions = subscribedPartitions(request);
            Map<String, Subscription> subscriptions = subscriptions(request.assignor(), request.members());
            long wall = System.nanoTime();
            long cpu = cpuNanos();
            result = assignor.assignPartitions(partitions, subscriptions);
            long cpuTaken = cpuNanos() - cpu;
            long wallTaken = System.nanoTime() - wall;
            long encodeWall = System.nanoTime();
            long encodeCpu = cpuNanos();
            for (List<TopicPartition> assigned : result.values()) {
                ConsumerProtocol.serializeAssignment(new Assignment(assigned));
            }
            long encodeCpuTaken = cpuNanos() - encodeCpu;
            long encodeWallTaken = System.nanoTime() - encodeWall;
            int timed = call - request.warmUps();
            if (timed >= 0) {
                times[4 * timed] = wallTaken;
                times[4 * timed + 1] = cpuTaken;
                times[4 * timed + 2] = encodeWallTaken;
                times[4 * timed + 3] = encodeCpuTaken;
            }
        }
        if (request.assignor().equals("cooperative-sticky")) {
            Map<String, List<TopicPartition>> target = new Target().assignPartitions(
                subscribedPartitions(request), subscriptions(request.assignor(), request.members()));
            for (Map.Entry<String, List<TopicPartition>> entry : result.entrySet()) {
                if (!new HashSet<>(target.get(entry.getKey())).containsAll(entry.getValue())) {
                    throw new IllegalStateException("the target of " + entry.getKey()
                        + " lacks part of its cooperative assignment");
                }
            }
            result = target;
        }
        response.append("times ").append(request.timed());
        for (long time : times) {
            response.append(' ').append(time);
        }
        response.append('\n');
        Map<String, Integer> index = new LinkedHashMap<>();
        for (int t = 0; t < request.topicNames().length; t++) {
            index.put(request.topicNames()[t], t);
        }
        for (Member member : request.members()) {
            List<TopicPartition> assigned = result.getOrDefault(member.id(), List.of());
            response.append("member ").append(member.id()).append(' ').append(assigned.size());
            for (TopicPartition tp : assigned) {
                response.append(' ').append(index.get(tp.topic())).append(' ').append(tp.partition());
            }
            response.append('\n');
        }
    }
}
