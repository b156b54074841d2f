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
