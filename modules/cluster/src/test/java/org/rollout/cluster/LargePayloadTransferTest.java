package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ObjectName;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;

/**
 * Payloads far above Artery's default 256 KiB frame cross nodes in chunks: a 16 × 32 768-token
 * group to a collector on the other node, and a batch of about 256 MB to a puller on the other
 * node. Contents are compared whole; bandwidth and heap are measured and printed (lines starting
 * with {@code LARGE-PAYLOAD}), never asserted: one run on a shared machine says little about speed.
 *
 * <p>{@code -Drollout.large_batch_groups=N} changes the batch's size (groups of 16 × 32 768 tokens,
 * about 8.9 MB each; default 30, about 267 MB).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LargePayloadTransferTest {
    private static final Duration DEADLINE = Duration.ofSeconds(120);
    private static final int ROWS = 16;
    private static final int TOKENS = 32_768;

    private final TwoNodes nodes = new TwoNodes();

    @AfterAll
    void shutdown() {
        nodes.close();
    }

    private ActorRef<Collector.Command> collectorOn(
            org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit kit, String name, int batchSize) {
        return TestCollectors.spawn(kit, name, batchSize, Duration.ofMinutes(10), false);
    }

    @Test
    void aSixteenBy32kGroupReachesACollectorOnAnotherNodeWithTheDefaultFrameSize() throws Exception {
        assertThat(nodes.a.system().settings().config().getBytes(LargePayloads.FRAME_KEY))
                .isEqualTo(256 * 1024);
        ActorRef<Collector.Command> onB = collectorOn(nodes.b, "group-collector", 1);
        ActorRef<Collector.Command> fromA = nodes.seenFromA(onB);
        LargePayloads senderSide = LargePayloads.get(nodes.a.system());
        TestProbe<Collector.PullReply> trainer = nodes.b.createTestProbe();
        // Three groups one after the other: the first pays for connection set-up and JIT warm-up.
        for (int task = 1; task <= 3; task++) {
            TrainingGroup group = Payloads.group(task, ROWS, TOKENS);
            Collector.GroupFinished finished = Payloads.accepted(group);
            long estimated = LargePayloads.estimatedBytes(finished);
            assertThat(estimated).isGreaterThan(senderSide.threshold() * 50);
            long bytesBefore = senderSide.bytesSent();
            long start = System.nanoTime();

            CollectorTransfers.deliver(fromA, finished, senderSide);

            onB.tell(new Collector.PullBatch(DEADLINE, 0, trainer.getRef()));
            Collector.PullReply reply = trainer.receiveMessage(DEADLINE);
            double seconds = (System.nanoTime() - start) / 1e9;
            long bytes = senderSide.bytesSent() - bytesBefore;

            assertThat(reply).isInstanceOf(Collector.BatchReply.class);
            List<TrainingGroup> received =
                    ((Collector.BatchReply) reply).batch().groups();
            assertThat(received).containsExactly(group);
            assertThat(LargePayloads.get(nodes.b.system()).streamsReceived()).isEqualTo(task);
            System.out.printf(
                    Locale.ROOT,
                    "LARGE-PAYLOAD group %d of 3, %dx%d tokens: %d bytes in %.3f s = %.1f MB/s (estimate %d bytes,"
                            + " chunk %d bytes)%n",
                    task,
                    ROWS,
                    TOKENS,
                    bytes,
                    seconds,
                    bytes / 1e6 / seconds,
                    estimated,
                    senderSide.chunkBytes());
        }
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES) // a loaded 2-core machine; the default is 120 s
    void aBatchOfAbout256MbReachesAPullerOnAnotherNodeAndIsEqual() throws Exception {
        int groups = Integer.getInteger("rollout.large_batch_groups", 30);
        ActorRef<Collector.Command> onA = collectorOn(nodes.a, "batch-collector", groups);
        TrainingGroup[] sent = new TrainingGroup[groups];
        for (int i = 0; i < groups; i++) {
            sent[i] = Payloads.group(100 + i, ROWS, TOKENS);
            onA.tell(Payloads.accepted(sent[i]));
        }
        long estimated = LargePayloads.estimatedBytes(new TrainingBatch(0, List.of(sent), 0));
        TestProbe<RolloutCoordinator.Command> coordinator = nodes.b.createTestProbe();
        TestProbe<WeightVersion.Command> weights = nodes.b.createTestProbe();
        LocalRolloutClient puller = new LocalRolloutClient(
                nodes.b.system(),
                new LocalRollout.Refs(coordinator.getRef(), nodes.seenFromB(onA), weights.getRef()),
                DEADLINE);
        LargePayloads senderSide = LargePayloads.get(nodes.a.system());
        long bytesBefore = senderSide.bytesSent();

        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long arraysBefore = liveArrayBytes();
        long baseline = memory.getHeapMemoryUsage().getUsed();
        HeapPeak peak = new HeapPeak(memory);
        long start = System.nanoTime();
        TrainingBatch batch = puller.nextBatch(DEADLINE).orElseThrow();
        double seconds = (System.nanoTime() - start) / 1e9;
        long peakUsed = peak.stop();
        long bytes = senderSide.bytesSent() - bytesBefore;
        long liveArrays = liveArrayBytes();

        assertThat(batch.groups()).containsExactly(sent);
        assertThat(senderSide.streamsSent()).isGreaterThanOrEqualTo(1);
        System.out.printf(
                Locale.ROOT,
                "LARGE-PAYLOAD batch of %d groups of %dx%d tokens: %d bytes in %.3f s = %.1f MB/s; heap used: peak"
                        + " %.1f MB above the %.1f MB before (garbage included); live primitive arrays after a full"
                        + " GC: %.1f MB before, %.1f MB after (+%.1f MB; the received copy is %.1f MB); max heap %.0f"
                        + " MB%n",
                groups,
                ROWS,
                TOKENS,
                bytes,
                seconds,
                bytes / 1e6 / seconds,
                (peakUsed - baseline) / 1e6,
                baseline / 1e6,
                arraysBefore / 1e6,
                liveArrays / 1e6,
                (liveArrays - arraysBefore) / 1e6,
                estimated / 1e6,
                Runtime.getRuntime().maxMemory() / 1e6);
        // Only the received copy is new: no serialized form of the batch outlives the transfer.
        assertThat(liveArrays - arraysBefore).isLessThan(estimated + estimated / 10);
    }

    /**
     * Bytes of live primitive arrays (int, float, bool, long, byte), from the JVM's class histogram,
     * which runs a full GC first. Used-heap figures alone mislead here: G1 counts the unused tail of
     * every region holding a multi-megabyte tensor as used.
     */
    private static long liveArrayBytes() throws Exception {
        String histogram = (String) ManagementFactory.getPlatformMBeanServer()
                .invoke(
                        new ObjectName("com.sun.management:type=DiagnosticCommand"),
                        "gcClassHistogram",
                        new Object[] {null},
                        new String[] {String[].class.getName()});
        long total = 0;
        for (String line : histogram.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 4 && List.of("[I", "[F", "[Z", "[J", "[B").contains(f[3])) {
                total += Long.parseLong(f[2]);
            }
        }
        return total;
    }

    /** Samples the used heap every 2 ms on a daemon thread until stopped; returns the highest seen. */
    private static final class HeapPeak {
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final AtomicLong peak = new AtomicLong();
        private final Thread thread;

        HeapPeak(MemoryMXBean memory) {
            thread = Thread.ofPlatform().daemon().name("heap-peak").start(() -> {
                while (running.get()) {
                    peak.accumulateAndGet(memory.getHeapMemoryUsage().getUsed(), Math::max);
                    java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
                }
            });
        }

        long stop() throws InterruptedException {
            running.set(false);
            thread.join(Duration.ofSeconds(5));
            return peak.get();
        }
    }
}
