package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.RolloutStatus;

/**
 * Trainers that misbehave: one that goes away mid-batch (pulls, then drops its connection without
 * acknowledging, or cuts the stream of a batch it is reading) and comes back through another node's
 * gateway, alternately relayed from the collector's node (a client that does not follow redirects)
 * and redirected to the collector's node's gateway; one slower than generation, under which
 * back-pressure must keep the nodes' memory bounded.
 */
@Timeout(300)
class TrainerChaosTest {
    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldDeliverAgainWhatATrainerDroppedMidBatchAfterItReconnectsElsewhere() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        // A batch not acknowledged within 5 s is delivered again.
                        .withConfig("rollout.batch_ack_timeout=5")
                        // Every group and batch crosses nodes on the data plane, so a batch pulled
                        // through node 2's or 3's gateway is relayed from the collector's node.
                        .withConfig("rollout.large_payload_threshold=0")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            t.startMonitor(Duration.ofMillis(500));
            NodeLossTest.steps(t, 4);
            List<String> events = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                // Pulled through the first contact point, then gone without a word.
                TrainingBatch dropped =
                        Waits.until("a batch to drop", Duration.ofSeconds(60), () -> t.pull(Duration.ofSeconds(2)));
                t.disconnect();
                c.faults().inject("trainer_disconnect");
                int via = 2 + round % 2;
                // Rounds 0 and 2 stay on node 2's gateway (relayed); round 1 follows node 3's
                // redirect to the collector's node.
                boolean follow = round % 2 == 1;
                t.reconnect(c.trainerClient(follow, via, 1, 5 - via));
                Set<Long> pending = new HashSet<>(
                        dropped.groups().stream().map(TrainingGroup::taskId).toList());
                Set<Long> again = new HashSet<>();
                Waits.untilTrue("the dropped batch's tasks delivered again", Duration.ofSeconds(90), () -> {
                    t.step(Duration.ofSeconds(2), true)
                            .ifPresent(b -> b.groups().stream()
                                    .map(TrainingGroup::taskId)
                                    .filter(pending::contains)
                                    .forEach(again::add));
                    return again.containsAll(pending);
                });
                events.add("batch " + dropped.batchId() + " dropped, its " + pending.size()
                        + " tasks delivered again through node-" + via + (follow ? " (redirected)" : " (relayed)"));

                // A pull whose response stream is cut after its first bytes.
                String cut = cutPullStream(c.gatewayUrls().get(round % c.nodeCount()));
                c.faults().inject("trainer_stream_cut");
                events.add(cut);
                NodeLossTest.steps(t, t.batchesAcknowledged() + 2);
            }
            NodeLossTest.steps(t, t.batchesAcknowledged() + 4);
            t.drain(Duration.ofSeconds(120));

            double relayed = 0;
            for (int node = 1; node <= c.nodeCount(); node++) {
                relayed += c.metrics(node)
                        .map(m -> TestCluster.metricSum(m, "rollout_batches_relayed_total"))
                        .orElse(0.0);
            }
            events.add(relayed + " batches relayed to a gateway from the collector's node");
            double redirected = 0;
            for (int node = 1; node <= c.nodeCount(); node++) {
                redirected += c.metrics(node)
                        .map(m -> TestCluster.metricSum(m, "rollout_gateway_pulls_redirected_total"))
                        .orElse(0.0);
            }
            events.add(redirected + " pulls redirected to the collector's node's gateway");

            RunReport report = RunReport.of(run.testName(), c, t, new Faults()).with("events", events);
            report.printAndAssertClean();
            assertThat(t.redeliveries()).as("batches delivered again").isPositive();
            assertThat(relayed)
                    .as("batches relayed through another node's gateway")
                    .isPositive();
            assertThat(redirected)
                    .as("pulls through another node's gateway redirected to the collector's node")
                    .isPositive();
        }
    }

    /**
     * Pulls a batch over a raw socket and closes the socket after the first bytes of a 200 answer
     * (trying again while the gateway answers 204: nothing ready); returns what happened.
     */
    private static String cutPullStream(String gateway) throws Exception {
        URI uri = URI.create(gateway);
        return Waits.until("a batch stream to cut", Duration.ofSeconds(60), () -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 5000);
                s.setSoTimeout(20_000);
                OutputStream out = s.getOutputStream();
                out.write(("POST /v1/batches/next?wait=2 HTTP/1.1\r\nHost: " + uri.getHost() + ":" + uri.getPort()
                                + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                byte[] head = in.readNBytes(12);
                String status = new String(head, StandardCharsets.US_ASCII);
                if (!status.startsWith("HTTP/1.1 200")) {
                    return Optional.empty();
                }
                byte[] more = in.readNBytes(200);
                TestCluster.log(
                        "cut a batch stream from " + gateway + " after " + (head.length + more.length) + " bytes");
                return Optional.of(
                        "a batch stream from " + gateway + " cut after " + (head.length + more.length) + " bytes");
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void shouldKeepTheNodesHeapBoundedUnderATrainerSlowerThanGeneration() throws Exception {
        // What back-pressure must hold each node to (its heap is 256 MiB): the engine buffers at
        // most the staleness budget's groups, whatever the trainer's pace.
        long boundBytes = 64L << 20;
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withConfig("rollout.consumer_batch_size=8", "rollout.max_concurrent_rollouts=24")
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false, 24, 8)) {
            t.startMonitor(Duration.ofMillis(500));
            NodeLossTest.steps(t, 3);
            Map<String, List<Long>> heapMiB = new LinkedHashMap<>();
            List<Integer> buffered = new ArrayList<>();
            long maxHeap = 0;
            // The trainer takes 1.5 s per batch; generation could fill a batch in a fraction of that.
            try (TrainingLoop loop = TrainingLoop.start(c, t, true, Duration.ofMillis(1500), 0, 3)) {
                // A sample every 4 s: its jcmd runs (a JVM each) count towards the 4 s.
                long nextSample = System.nanoTime();
                for (int sample = 0; sample < 5; sample++) {
                    nextSample += Duration.ofSeconds(4).toNanos();
                    Thread.sleep(Math.max(0, (nextSample - System.nanoTime()) / 1_000_000));
                    loop.check();
                    RolloutStatus s = t.observe();
                    buffered.add(s.bufferedGroups());
                    for (int n = 1; n <= c.nodeCount(); n++) {
                        long bytes = c.heapAfterGc(n);
                        maxHeap = Math.max(maxHeap, bytes);
                        heapMiB.computeIfAbsent("node-" + n, k -> new ArrayList<>())
                                .add(bytes >> 20);
                    }
                }
            }
            t.drain(Duration.ofSeconds(120));

            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("heap after GC, MiB, every 4 s", heapMiB)
                    .with("groups buffered for the trainer, every 4 s", buffered)
                    .with("bound (MiB)", boundBytes >> 20);
            report.printAndAssertClean();
            assertThat(maxHeap).as("largest heap after GC of a node, bytes").isLessThan(boundBytes);
            // Accepted and unconsumed groups never exceed the staleness budget: (η + 1) · B ahead.
            assertThat(buffered).allSatisfy(b -> assertThat(b).isLessThanOrEqualTo(2 * 8));
        }
    }
}
