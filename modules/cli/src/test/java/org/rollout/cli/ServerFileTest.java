package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.ModelRequest;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.ServerStats;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * {@code rollout.server_file}: a real file re-read while an engine serves from real model servers;
 * a line added is a server added, a line removed a server drained; bad files and keys are refused
 * naming the key, the file and the line.
 */
class ServerFileTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline)
                    .as("%s within %s", what, DEADLINE)
                    .isNegative();
            LockSupport.parkNanos(20_000_000);
        }
    }

    private static ServerStats stats(RemoteInferenceEngine engine, ServerAddress server) {
        return engine.serverStats().stream()
                .filter(s -> s.address().equals(server))
                .findFirst()
                .orElse(null);
    }

    @Test
    void linesAddedAreServersAddedAndLinesRemovedAreServersDrained(@TempDir Path dir) throws Exception {
        try (ModelServer a = ModelServer.start(ModelServerConfig.defaults());
                ModelServer b = ModelServer.start(ModelServerConfig.defaults())) {
            ServerAddress addressA = new ServerAddress("127.0.0.1", a.port());
            ServerAddress addressB = new ServerAddress("127.0.0.1", b.port());
            Path file = dir.resolve("servers.txt");
            Files.writeString(file, "# the fleet\n" + addressA + "   # the first one\n\n");
            List<ServerAddress> initial = ServerFile.read(file);
            assertThat(initial).containsExactly(addressA);
            try (RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                            .serverAddresses(initial)
                            .healthCheckInterval(Duration.ofMillis(100))
                            .build());
                    ServerFile watcher = ServerFile.watch(
                            file, Duration.ofMillis(100), initial, new EngineServerDirectory(engine, null))) {
                Files.writeString(file, addressA + "\n" + addressB + "\n");
                await("B added and in rotation", () -> {
                    ServerStats s = stats(engine, addressB);
                    return s != null && s.inRotation();
                });

                Files.writeString(file, addressA + "\nnot an address\n");
                Files.writeString(file, addressB + "\n"); // the bad version may or may not have been read
                await("A drained and gone", () -> stats(engine, addressA) == null);
                long onA = a.stats().requestsTotal();
                for (int i = 0; i < 3; i++) {
                    engine.generate(ModelRequest.of(
                            new int[] {'h', 'i'},
                            GenerationConfig.builder().maxNewTokens(3).build()));
                }
                assertThat(a.stats().requestsTotal()).isEqualTo(onA);
                assertThat(engine.serverStats())
                        .extracting(ServerStats::address)
                        .containsExactly(addressB);
            }
        }
    }

    @Test
    void aBadLineIsRefusedNamingTheFileAndTheLineAndTheWatcherKeepsThePreviousList(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("servers.txt");
        Files.writeString(file, "127.0.0.1:30000\n127.0.0.1\n");
        assertThatThrownBy(() -> ServerFile.read(file))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("rollout.server_file")
                .hasMessageContaining(file + " line 2: '127.0.0.1'");
        assertThatThrownBy(() -> ServerFile.read(dir.resolve("missing.txt")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("rollout.server_file")
                .hasMessageContaining("missing.txt");
    }

    @Test
    void theKeysAreReadAndBadValuesRefusedNamingTheKey(@TempDir Path dir) throws Exception {
        RolloutSettings ok = RolloutConfig.load(
                null, List.of("rollout.server_file=" + dir.resolve("s.txt"), "rollout.server_file_interval=0.5"));
        assertThat(ok.serverFile()).contains(dir.resolve("s.txt"));
        assertThat(ok.serverFileInterval()).isEqualTo(Duration.ofMillis(500));
        RolloutSettings defaults = RolloutConfig.load(null, List.of());
        assertThat(defaults.serverFile()).isEmpty();
        assertThat(defaults.serverFileInterval()).isEqualTo(Duration.ofSeconds(5));

        assertThatThrownBy(() -> RolloutConfig.load(null, List.of("rollout.server_file_interval=0")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rollout.server_file_interval");
        assertThatThrownBy(() -> RolloutConfig.load(null, List.of("rollout.server_file=\"  \"")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rollout.server_file");
    }
}
