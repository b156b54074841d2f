package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.AcceptFilter;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingGroup;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.TrajectoryRows;
import org.rollout.testengine.ScriptedEngine;

/** Messages between two nodes: what is refused, and the real actors' path for a large group. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CrossNodeTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private final TwoNodes nodes = new TwoNodes();

    @AfterAll
    void shutdown() {
        nodes.close();
    }

    /** Bound to Kryo by its marker, but not in the registration list. */
    record Unregistered(int value) implements KryoSerializable {}

    /** Only Java-serializable: Java serialization is off. */
    record JavaOnly(String value) implements java.io.Serializable {}

    /** No marker and no binding at all. */
    record Unmarked(int value) {}

    @Test
    void unserializableMessagesAreRefusedWithALoggedErrorAndTheNextMessageStillArrives() {
        TestProbe<Object> onB = nodes.b.createTestProbe();
        ActorRef<Object> fromA = nodes.seenFromA(onB.getRef());
        try (LogCapture log = new LogCapture()) {
            fromA.tell(new Unregistered(1));
            fromA.tell(new JavaOnly("x"));
            fromA.tell(new Unmarked(2));
            fromA.tell(new Collector.AckReply(5, true));

            assertThat(onB.receiveMessage(DEADLINE)).isEqualTo(new Collector.AckReply(5, true));
            await(
                    "the three refusals to be logged",
                    DEADLINE,
                    () -> !log.errorsContaining(Unregistered.class.getName()).isEmpty()
                            && !log.errorsContaining(JavaOnly.class.getName()).isEmpty()
                            && !log.errorsContaining(Unmarked.class.getName()).isEmpty());
            assertThat(log.errorsContaining(Unregistered.class.getName()))
                    .anyMatch(e -> e.contains("Class is not registered"));
            assertThat(log.errorsContaining(JavaOnly.class.getName()))
                    .anyMatch(e -> e.contains("allow-java-serialization"));
            assertThat(log.errorsContaining(Unmarked.class.getName())).anyMatch(e -> e.contains("serializ"));
        }
        onB.expectNoMessage(Duration.ofMillis(500));
        // The connection is still good both ways.
        TestProbe<Object> onA = nodes.a.createTestProbe();
        nodes.seenFromB(onA.getRef()).tell(new Collector.AckReply(6, false));
        assertThat(onA.receiveMessage(DEADLINE)).isEqualTo(new Collector.AckReply(6, false));
    }

    @Test
    void aGroupRunOnOneNodeIsStreamedToTheCollectorOnTheOtherWhenItExceedsTheThreshold() {
        int tokens = 4096;
        int groupSize = 4;
        GenerationConfig g = GenerationConfig.builder()
                .nSamples(groupSize)
                .maxNewTokens(tokens)
                .build();
        RolloutWorkflow wf = (engine, data) -> EpisodeResult.trajectory(TrajectoryRows.singleTurn(
                engine.generate(ModelRequest.of(new int[] {'p', 'q'}, g.withNSamples(1))), 1.0));
        NodeServices svc = new NodeServices(
                ScriptedEngine.generating(tokens),
                wf,
                wf,
                GroupOptions.from(g, 1),
                new GroupOptions(groupSize, groupSize, false, false, true),
                AcceptFilter.all(),
                null,
                null,
                StalenessPolicy.ADMISSION,
                0,
                Duration.ofSeconds(60),
                HttpClient.newHttpClient(),
                NodeServices.virtualThreads());
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topicA =
                nodes.a.spawn(Topic.create(WeightVersion.VersionChanged.class, "versions"), "versions");
        ActorRef<GroupRunner.Command> runnerOnA = nodes.a.spawn(
                GroupRunner.create(
                        svc,
                        "node-a",
                        2,
                        topicA,
                        Duration.ofSeconds(60),
                        new java.util.concurrent.atomic.LongAdder(),
                        Supervision.Wrapper.IDENTITY),
                "runner");
        ActorRef<Topic.Command<WeightVersion.VersionChanged>> topicB =
                nodes.b.spawn(Topic.create(WeightVersion.VersionChanged.class, "versions"), "versions");
        ActorRef<Collector.Command> collectorOnB = nodes.b.spawn(
                TestCollectors.behavior(1, Duration.ofMinutes(5), topicB, null, false, RankShare.ALONE), "collector");
        long streamedBefore = LargePayloads.get(nodes.a.system()).streamsSent();

        // Dispatched from node B (where the coordinator would be) to the runner on node A.
        nodes.seenFromB(runnerOnA)
                .tell(new GroupRunner.RunGroup(41, 0, Map.of("prompt", "pq", "n", 1), false, 0, collectorOnB, 0, 1));

        TestProbe<Collector.PullReply> trainer = nodes.b.createTestProbe();
        collectorOnB.tell(new Collector.PullBatch(DEADLINE, 0, trainer.getRef()));
        Collector.BatchReply reply = (Collector.BatchReply) trainer.receiveMessage(DEADLINE);
        TrainingGroup group = reply.batch().groups().get(0);
        assertThat(group.taskId()).isEqualTo(41);
        assertThat(group.rowCount()).isEqualTo(groupSize);
        assertThat(group.rows().tensor(TensorDict.INPUT_IDS).dim(1)).isEqualTo(2 + tokens);
        assertThat(LargePayloads.estimatedBytes(group))
                .isGreaterThan(LargePayloads.get(nodes.a.system()).threshold());
        assertThat(LargePayloads.get(nodes.a.system()).streamsSent()).isEqualTo(streamedBefore + 1);
    }

    @Test
    void aReplyToAPullerInTheSameSystemIsNeverStreamed() {
        LargePayloads a = LargePayloads.get(nodes.a.system());
        TestProbe<Object> local = nodes.a.createTestProbe();
        TestProbe<Object> remote = nodes.b.createTestProbe();
        assertThat(a.streams(local.getRef(), Long.MAX_VALUE)).isFalse();
        assertThat(a.streams(nodes.seenFromA(remote.getRef()), a.threshold())).isFalse();
        assertThat(a.streams(nodes.seenFromA(remote.getRef()), a.threshold() + 1))
                .isTrue();
    }
}
