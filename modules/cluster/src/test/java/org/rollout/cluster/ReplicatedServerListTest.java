package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * The run-time server list replicated with Distributed Data across two nodes (two actor systems
 * joined over Artery on 127.0.0.1), each with its own engine: a server added through one node is
 * loaded and used by the other node's engine; a server drained through one node leaves the other
 * node's pool.
 */
class ReplicatedServerListTest {
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    private final TwoNodes nodes = new TwoNodes();
    private ModelServer a;
    private ModelServer b;
    private RemoteInferenceEngine engineOnA;
    private RemoteInferenceEngine engineOnB;

    @AfterEach
    void tearDown() {
        for (AutoCloseable c : new AutoCloseable[] {engineOnA, engineOnB, a, b, nodes}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
    }

    private static RemoteInferenceEngine engine(ModelServer server) {
        return new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + server.port())
                .healthCheckInterval(Duration.ofMillis(100))
                .build());
    }

    private static ServerStats stats(RemoteInferenceEngine engine, ServerAddress server) {
        return engine.serverStats().stream()
                .filter(s -> s.address().equals(server))
                .findFirst()
                .orElse(null);
    }

    @Test
    void aServerAddedOnOneNodeIsUsedByTheOtherAndADrainedOneLeavesBoth() throws Exception {
        a = ModelServer.start(ModelServerConfig.defaults());
        b = ModelServer.start(ModelServerConfig.defaults());
        ServerAddress addressA = new ServerAddress("127.0.0.1", a.port());
        ServerAddress addressB = new ServerAddress("127.0.0.1", b.port());
        engineOnA = engine(a);
        engineOnB = engine(a);
        ReplicatedServerList listOnA = ReplicatedServerList.follow(nodes.a.system(), engineOnA, Duration.ofSeconds(10));
        ReplicatedServerList.follow(nodes.b.system(), engineOnB, Duration.ofSeconds(10));

        listOnA.add(addressB).toCompletableFuture().get(20, TimeUnit.SECONDS);

        await("node B's engine to take server B into rotation", DEADLINE, () -> {
            ServerStats s = stats(engineOnB, addressB);
            return s != null && s.inRotation();
        });
        await("node A's engine to take server B into rotation", DEADLINE, () -> {
            ServerStats s = stats(engineOnA, addressB);
            return s != null && s.inRotation();
        });
        GenerationConfig g = GenerationConfig.builder().maxNewTokens(4).build();
        for (int i = 0; i < 6; i++) {
            engineOnB.generate(ModelRequest.of(new int[] {'h', 'i'}, g));
        }
        assertThat(stats(engineOnB, addressB).requests())
                .as("node B's engine routes to the server added through node A")
                .isPositive();

        listOnA.drain(addressA, Duration.ofSeconds(30)).toCompletableFuture().get(20, TimeUnit.SECONDS);
        await("server A to leave node B's pool", DEADLINE, () -> stats(engineOnB, addressA) == null);
        await("server A to leave node A's pool", DEADLINE, () -> stats(engineOnA, addressA) == null);
        long onA = a.stats().requestsTotal();
        for (int i = 0; i < 4; i++) {
            engineOnB.generate(ModelRequest.of(new int[] {'h', 'i'}, g));
        }
        assertThat(a.stats().requestsTotal())
                .as("the drained server gets nothing more")
                .isEqualTo(onA);
    }

    @Test
    void anEngineThatStartsFollowingAfterADrainDropsTheDrainedServerOfItsConfiguration() throws Exception {
        // A node restarted with the drained server still in its rollout.servers.
        a = ModelServer.start(ModelServerConfig.defaults());
        b = ModelServer.start(ModelServerConfig.defaults());
        ServerAddress addressA = new ServerAddress("127.0.0.1", a.port());
        engineOnA = new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + a.port(), "127.0.0.1:" + b.port())
                .healthCheckInterval(Duration.ofMillis(100))
                .build());
        // Node B's replicator runs (as on every node: the durable state uses it) before it follows.
        DistributedData.get(nodes.b.system());
        ReplicatedServerList listOnA = ReplicatedServerList.follow(nodes.a.system(), engineOnA, Duration.ofSeconds(30));
        listOnA.drain(addressA, Duration.ofSeconds(1)).toCompletableFuture().get(40, TimeUnit.SECONDS);
        await("server A to leave node A's pool", DEADLINE, () -> stats(engineOnA, addressA) == null);

        engineOnB = new RemoteInferenceEngine(InferenceConfig.builder()
                .addresses("127.0.0.1:" + a.port(), "127.0.0.1:" + b.port())
                .healthCheckInterval(Duration.ofMillis(100))
                .build());
        assertThat(stats(engineOnB, addressA)).as("configured").isNotNull();
        ReplicatedServerList.follow(nodes.b.system(), engineOnB, Duration.ofSeconds(30));
        await("the drained server to leave the late engine's pool", DEADLINE, () -> stats(engineOnB, addressA) == null);
    }
}
