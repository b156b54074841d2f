package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.NotSerializableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SourceRef;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.StreamRefs;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.StalenessBudget;
import org.rollout.trainer.PublishResult;

/**
 * Every message that may cross nodes round-trips through Pekko's serialization with the serializer
 * its marker binds: Jackson CBOR for control messages, Kryo for tensor payloads, {@code
 * rollout-ledger} for the values the replicated ledger keeps in Distributed Data.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MessageSerializationTest {
    private final ActorTestKit kit = ActorTestKit.create("serialization-test", TestRollout.PEKKO);
    private final Serialization serialization = SerializationExtension.get(Adapter.toClassic(kit.system()));

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private <T> ActorRef<T> ref() {
        return kit.<T>createTestProbe().getRef();
    }

    private SourceRef<ByteString> sourceRef() {
        return Source.<ByteString>empty().runWith(StreamRefs.sourceRef(), Materializer.matFromSystem(kit.system()));
    }

    private static TensorDict everyDtype() {
        Int32Tensor wide = Int32Tensor.matrix(new int[] {1, 2, 3}, new int[] {4, 5, 6}, new int[] {7, 8, 9});
        return TensorDict.builder()
                .put(TensorDict.INPUT_IDS, wide.slice(1, 3)) // a view with an offset
                .put(
                        TensorDict.ATTENTION_MASK,
                        BoolTensor.matrix(new boolean[] {true, false, true}, new boolean[] {true, true, false}))
                .put(TensorDict.LOGPROBS, Float32Tensor.of(new float[] {0f, -0.5f, Float.NaN, -1f, -2f, -3f}, 2, 3))
                .put("positions", Int64Tensor.of(new long[] {Long.MAX_VALUE, -1, 0, 1, 2, Long.MIN_VALUE}, 2, 3))
                .put(TensorDict.REWARDS, Float32Tensor.vector(1f, -1f))
                .put(TensorDict.ROLLOUT_REWARD, Float32Tensor.scalar(0.25f))
                .put("empty", Int32Tensor.filled(0, 0, 3))
                .build();
    }

    private static TrainingGroup smallGroup(long taskId) {
        return new TrainingGroup(taskId, 1, everyDtype(), new int[] {0, 2}, new int[] {1, 1}, 3, 3, 4, 5);
    }

    /** One instance of every message that may cross nodes. */
    private List<Object> crossNodeMessages() {
        TrainingBatch batch = new TrainingBatch(9, List.of(smallGroup(1), Payloads.group(2, 3, 40)), 6);
        StalenessBudget.Snapshot snapshot = new StalenessBudget(4, 2, 1).snapshot();
        ScalarStats stats = new ScalarStats();
        stats.scalar("reward", 0.75);
        return List.of(
                // RolloutCoordinator
                new RolloutCoordinator.TaskFinished(3, 1, false, true, null, 2),
                new RolloutCoordinator.TaskFinished(4, 0, true, false, "failed", 0),
                new RolloutCoordinator.Backlog(5),
                new RolloutCoordinator.OutcomeHeld(8),
                new RolloutCoordinator.HandingOut(9, List.of(1L, 2L), ref()),
                new RolloutCoordinator.AcceptedDiscarded(6, 1),
                new RolloutCoordinator.PauseAdmission(7),
                new RolloutCoordinator.ResumeAdmission(7, 3),
                new RolloutCoordinator.ResumeAdmission(8, 4, ref()),
                new RolloutCoordinator.EvaluateNow(5),
                new RolloutCoordinator.GetStatus(ref()),
                new RolloutCoordinator.Status(
                        snapshot, 3, 1, true, false, 2, Map.of("node-a", 2, "node-b", 1), Duration.ofMillis(1500), 4),
                // GroupRunner
                new GroupRunner.RunGroup(
                        11,
                        2,
                        Map.of(
                                "prompt",
                                "2+2=",
                                "answer",
                                4,
                                "weight",
                                0.5,
                                "big",
                                10_000_000_000L,
                                "tags",
                                List.of("math", "easy"),
                                "meta",
                                Map.of("source", "gsm8k", "ok", true)),
                        false,
                        3,
                        ref(),
                        0,
                        1),
                new GroupRunner.CancelGroup(11, 1, RejectReason.CANCELLED, "attempt 2 finished first"),
                new GroupRunner.GetInfo(ref()),
                new GroupRunner.Info(ref(), "node-a", 4, 2),
                new GroupRunner.PrepareWeightUpdate(8, ref()),
                new GroupRunner.AbandonWeightUpdate(8),
                // WeightVersion
                new WeightVersion.VersionChanged(3, "/weights/v3"),
                new WeightVersion.Publish(4, "/weights/v4.rlm", ref()),
                new WeightVersion.PublishReply(
                        4,
                        null,
                        new PublishResult(4, Duration.ofMillis(20), 1, Map.of("127.0.0.1:30001", "refused")),
                        null),
                new WeightVersion.PublishReply(
                        4,
                        "version 4 is not newer than the current version 4",
                        null,
                        org.rollout.trainer.WeightPublishException.Kind.REFUSED),
                new WeightVersion.GetVersion(ref()),
                new WeightVersion.RunnerPrepared(8, ref()),
                // Collector
                Payloads.accepted(smallGroup(12)),
                new Collector.GroupFinished(
                        13,
                        0,
                        true,
                        2,
                        3,
                        new Collector.Rejected(RejectReason.TIMEOUT, "not finished within episode_timeout=PT1H"),
                        Map.of(),
                        stats.totals(),
                        17),
                new Collector.StreamedGroupFinished(14, 0, false, 2, 3, 100, 9_000_000, sourceRef(), null),
                new Collector.StreamedGroupFinished(
                        15, 1, false, 2, 3, 100, 9_000_000, null, new DirectRef("10.0.0.7", 40123, "00ff".repeat(8))),
                new Collector.Attach(ref(), 2, 40, java.util.List.of(3L, 7L), java.util.List.of(7L)),
                new Collector.AcceptRecorded(12),
                new Collector.HandOutRecorded(13),
                new Collector.Introduce(ref()),
                new RolloutCoordinator.CollectorIs(ref()),
                new RolloutCoordinator.CollectorRestarted(ref()),
                new RolloutCoordinator.BatchConsumed(9, java.util.List.of(1L, 2L), ref()),
                new GroupRunner.Forget(java.util.List.of(4L)),
                new GroupRunner.Resend(java.util.List.of(4L), ref(), 0, 1),
                new GroupRunner.GetHoldings(ref(), 0, 1, ref()),
                new GroupRunner.Holdings(ref(), "node-a", java.util.List.of(new GroupRunner.Held(4, 1, true, true))),
                new DurableState.OpenTask(4, 1, false, 17, 3, true, true),
                new DurableState.Cursor(40, 38, 20, 2),
                new DurableState.VersionRecord(5, "/w/v5"),
                new Collector.PullBatch(Duration.ofSeconds(20), 3, ref()),
                new Collector.PullBatch(Duration.ofSeconds(20), 3, "host-a:412:9f3c", 15_000, ref()),
                new Collector.PullBatch(Duration.ofSeconds(20), 3, "host-a:412:9f3c", 15_000, true, ref()),
                new Collector.ReadFrom("http://10.0.0.5:8470"),
                new Collector.RenewLease("host-a:412:9f3c", 15_000, ref()),
                new Collector.LeaseRenewed(java.util.List.of(9L, 10L)),
                new Collector.BatchReply(batch),
                new Collector.BatchReply(null),
                new Collector.StreamedBatchReply(9, 2, java.util.List.of(4L, 5L), 268_000_000, sourceRef(), null),
                new Collector.StreamedBatchReply(
                        10,
                        2,
                        java.util.List.of(6L, 7L),
                        268_000_000,
                        null,
                        new DirectRef("127.0.0.1", 1, "ab".repeat(16))),
                new Collector.Ack(9, java.util.List.of(1L, 2L), ref()),
                new Collector.AckReply(9, true),
                new Collector.Release(9),
                new Collector.VersionChanged(3),
                new Collector.EvalPassFinished(2),
                new Collector.EvalPassStarted(2),
                new Collector.GetStats(1, ref()),
                new Collector.StatsReply(
                        java.util.List.of(
                                "{\"version\":1,\"scope\":\"rollout\",\"groups\":2,\"reward\":0.5}",
                                "{\"version\":1,\"scope\":\"eval-rollout\",\"groups\":1,\"reward\":NaN}"),
                        2),
                new Collector.GetStatus(ref()),
                new Collector.Status(
                        1,
                        2,
                        1,
                        3,
                        4,
                        Map.of("failed", 2L),
                        Map.of("rollout", Map.of("reward", 0.5, "reward__count", 2.0)),
                        Map.of("failed", "task 3 attempt 0: task 3 slot 1 threw ValueError: bad"),
                        java.util.List.of(
                                new org.rollout.trainer.HeldBatch(9, 2, "host-a:412:9f3c", true, 12_500),
                                new org.rollout.trainer.HeldBatch(10, 2, "127.0.0.1:51234", false, 590_000))),
                new Collector.Flush(ref()));
    }

    private Object roundTrip(Object message) throws NotSerializableException {
        var serializer = serialization.findSerializerFor(message);
        byte[] bytes = serialization.serialize(message).get();
        String manifest = Serializers.manifestFor(serializer, message);
        return serialization
                .deserialize(bytes, serializer.identifier(), manifest)
                .get();
    }

    @Test
    void everyCrossNodeMessageRoundTripsThroughItsBoundSerializer() throws Exception {
        for (Object message : crossNodeMessages()) {
            var serializer = serialization.findSerializerFor(message);
            if (message instanceof KryoSerializable) {
                assertThat(serializer).as("%s", message.getClass()).isInstanceOf(KryoPayloadSerializer.class);
            } else if (message instanceof DurableState.LedgerEntry) {
                assertThat(serializer).as("%s", message.getClass()).isInstanceOf(LedgerEntrySerializer.class);
            } else {
                assertThat(message).isInstanceOf(CborSerializable.class);
                assertThat(serializer).as("%s", message.getClass()).isInstanceOf(JacksonCborSerializer.class);
            }
            Object back = roundTrip(message);
            if (message instanceof Collector.StreamedGroupFinished || message instanceof Collector.StreamedBatchReply) {
                assertThat(back).hasSameClassAs(message).hasToString(message.toString());
            } else {
                assertThat(back).as("%s", message.getClass()).isEqualTo(message);
            }
        }
    }

    @Test
    void theTableCoversEveryCommandThatIsNotNodeLocal() {
        Set<Class<?>> covered = new LinkedHashSet<>();
        crossNodeMessages().forEach(m -> covered.add(m.getClass()));
        List<Class<?>> missing = new ArrayList<>();
        for (Class<?> protocol : List.of(
                RolloutCoordinator.Command.class,
                GroupRunner.Command.class,
                WeightVersion.Command.class,
                Collector.Command.class,
                Collector.PullReply.class)) {
            for (Class<?> c : protocol.getPermittedSubclasses()) {
                if (!NodeLocal.class.isAssignableFrom(c) && !covered.contains(c)) {
                    missing.add(c);
                }
            }
        }
        assertThat(missing).as("messages without a round-trip case").isEmpty();
    }

    @Test
    void slotOutcomesAreNodeLocal() {
        assertThat(List.of(
                        GroupRunner.Ended.class,
                        GroupRun.Start.class,
                        GroupRun.SlotFailed.class,
                        GroupRun.Concluded.class,
                        GroupRun.Abandon.class,
                        GroupRun.VersionChanged.class))
                .allMatch(NodeLocal.class::isAssignableFrom);
    }

    @Test
    void dataItemsComeBackAsJsonTypes() throws Exception {
        GroupRunner.RunGroup run = new GroupRunner.RunGroup(
                1, 0, Map.of("count", 3L, "ratio", 0.5f, "ids", new int[] {1, 2}), false, 0, ref(), 0, 1);
        GroupRunner.RunGroup back = (GroupRunner.RunGroup) roundTrip(run);
        // The long 3 comes back as the smallest JSON integer type, an int[] as a list.
        assertThat(back.data()).containsEntry("count", 3);
        assertThat(((Number) back.data().get("ratio")).doubleValue()).isEqualTo(0.5);
        assertThat(back.data().get("ids")).isEqualTo(List.of(1, 2));
    }

    @Test
    void aTensorViewComesBackCompactAndEqual() throws Exception {
        Int32Tensor wide = Int32Tensor.matrix(new int[] {1, 2}, new int[] {3, 4}, new int[] {5, 6});
        TensorDict d = TensorDict.builder().put("x", wide.slice(2, 3)).build();
        TrainingGroup g = new TrainingGroup(1, 0, d, new int[] {0}, new int[] {1}, 0, 0, 0, 0);
        Collector.BatchReply back =
                (Collector.BatchReply) roundTrip(new Collector.BatchReply(new TrainingBatch(1, List.of(g), 0)));
        Int32Tensor x = back.batch().groups().get(0).rows().int32("x");
        assertThat(x.toArray()).containsExactly(5, 6);
        assertThat(x.shape()).containsExactly(1, 2);
    }

    /** Bound to Kryo by its marker, but not in the registration list. */
    record Unregistered(int value) implements KryoSerializable {}

    @Test
    void kryoRefusesAClassOutsideItsRegistrationList() {
        assertThatThrownBy(() -> serialization.serialize(new Unregistered(1)).get())
                .hasMessageContaining("Class is not registered")
                .hasMessageContaining(Unregistered.class.getName());
    }

    /** Only Java-serializable: Java serialization is off. */
    record JavaOnly(String value) implements java.io.Serializable {}

    @Test
    void javaSerializationIsOff() {
        assertThatThrownBy(() -> serialization.serialize(new JavaOnly("x")).get())
                .hasMessageContaining("allow-java-serialization");
    }

    @Test
    void kryoRefusesBytesThatAreCutShort() throws Exception {
        KryoPayloadSerializer kryo = (KryoPayloadSerializer) serialization.serializerFor(Collector.BatchReply.class);
        byte[] whole = kryo.toBinary(new Collector.BatchReply(new TrainingBatch(1, List.of(smallGroup(1)), 0)));
        byte[] cut = java.util.Arrays.copyOf(whole, whole.length / 2);
        assertThatThrownBy(() -> kryo.fromBinaryJava(cut, null)).hasMessageContaining("Buffer underflow");
    }
}
