package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationException;
import org.rollout.config.ServerAddress;

class InitializeTest {
    private final FakeInferenceServer server = FakeInferenceServer.start();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        server.close();
    }

    @Test
    void returnsOnceEveryServerAnswersHealth() throws Exception {
        engine = engine(config(server.address()).build());

        engine.initialize();

        assertThat(server.requests("/health")).hasSize(1);
    }

    @Test
    void waitsForAServerThatComesUpLate() throws Exception {
        server.setHealthy(false);
        engine = engine(config(server.address()).build());
        CompletableFuture<Void> init = CompletableFuture.runAsync(() -> {
            try {
                engine.initialize();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        server.awaitRequests("/health", 2, Duration.ofSeconds(10));
        assertThat(init).isNotDone();

        server.setHealthy(true);

        init.get(10, TimeUnit.SECONDS);
    }

    @Test
    void saysWhichServersItWaitsForAndHowLongItWillWait() throws Exception {
        ServerAddress dead = FakeInferenceServer.unusedAddress();
        engine = engine(config(server.address(), dead)
                .setupTimeout(Duration.ofMillis(2500))
                .build());
        java.util.List<String> said = new java.util.concurrent.CopyOnWriteArrayList<>();

        assertThatThrownBy(() -> engine.initialize(said::add)).isInstanceOf(GenerationException.class);

        assertThat(said).as("said once after a second, then every 10 s").hasSize(1);
        assertThat(said.getFirst())
                .startsWith("waiting for 1 of 2 inference server(s) to be ready, ")
                .contains("at most 2.5 s (setup_timeout)")
                .contains(dead + " (health check: connection refused or unreachable)");
    }

    @Test
    void failsAfterSetupTimeoutNamingTheServersThatNeverCameUp() {
        ServerAddress dead = FakeInferenceServer.unusedAddress();
        engine = engine(config(server.address(), dead)
                .setupTimeout(Duration.ofMillis(300))
                .build());

        assertThatThrownBy(() -> engine.initialize())
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("inference servers not ready after 0.3 s (setup_timeout)")
                .hasMessageContaining(dead + " (health check: connection refused or unreachable)")
                .satisfies(e -> assertThat(e.getMessage())
                        .doesNotContain(server.address().toString()));
    }
}
