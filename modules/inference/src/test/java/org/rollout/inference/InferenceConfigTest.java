package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;

class InferenceConfigTest {

    @Test
    void hasAReaLsDefaults() {
        InferenceConfig c =
                InferenceConfig.builder().addresses("127.0.0.1:30000").build();
        assertThat(c.backend()).isEqualTo(Backend.SGLANG);
        assertThat(c.dataParallelSize()).isEqualTo(1);
        assertThat(c.requestTimeout()).isEqualTo(Duration.ofSeconds(3600));
        assertThat(c.requestRetries()).isEqualTo(3);
        assertThat(c.setupTimeout()).isEqualTo(Duration.ofSeconds(300));
        assertThat(c.routingStrategy()).isEqualTo(RoutingStrategy.GROUP_AFFINITY);
        assertThat(c.stickyByRid()).isTrue();
        assertThat(c.stickySlack()).isEqualTo(8);
        assertThat(c.pauseGracePeriod()).isEqualTo(Duration.ZERO);
        assertThat(ServerProtocol.of(c.backend())).isSameAs(SglangProtocol.INSTANCE);
    }

    @Test
    void parsesAReaLsBackendAllocationSuffix() {
        InferenceConfig.Builder b = InferenceConfig.builder().addresses("127.0.0.1:1");
        assertThat(b.backend("sglang:d4").build().dataParallelSize()).isEqualTo(4);
        InferenceConfig v = b.backend("vllm:d2t4").build();
        assertThat(v.backend()).isEqualTo(Backend.VLLM);
        assertThat(v.dataParallelSize()).isEqualTo(2);
        assertThat(b.backend("sglang:d4p1t2").build().dataParallelSize()).isEqualTo(4);
        assertThat(b.backend("vllm:t2").build().dataParallelSize()).isEqualTo(1);
        assertThat(ServerProtocol.of(b.backend("vllm").build().backend())).isSameAs(VllmProtocol.INSTANCE);
    }

    @Test
    void rejectsAnUnknownBackendNamingTheKey() {
        for (String bad :
                List.of("trt", "sglang:", "sglang:x4", "sglang:d0", "sglang:d4d2", "sglang:d4-t2", "SGLANG")) {
            assertThatThrownBy(() -> InferenceConfig.builder().backend(bad))
                    .as(bad)
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("'backend'");
        }
    }

    @Test
    void requiresAtLeastOneAddressWithoutDuplicates() {
        assertThatThrownBy(() -> InferenceConfig.builder().build())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'addresses'")
                .hasMessageContaining("at least one host:port");
        assertThatThrownBy(() -> InferenceConfig.builder()
                        .addresses("127.0.0.1:1", "127.0.0.1:1")
                        .build())
                .hasMessageContaining("no duplicates");
    }

    @Test
    void parsesAddressesIncludingBracketedIpv6() {
        assertThat(ServerAddress.parse("[::1]:30000")).isEqualTo(new ServerAddress("::1", 30000));
        assertThat(ServerAddress.parse("[::1]:30000").toString()).isEqualTo("[::1]:30000");
        assertThat(ServerAddress.parse("[::1]:30000").uri("/health").toString()).isEqualTo("http://[::1]:30000/health");
        assertThat(ServerAddress.parse("node-3:8000").uri("/generate").toString())
                .isEqualTo("http://node-3:8000/generate");
        for (String bad :
                List.of("localhost", "127.0.0.1:", ":80", "127.0.0.1:http", "::1:80", "h:0", "h:70000", "http://h:1")) {
            assertThatThrownBy(() -> ServerAddress.parse(bad))
                    .as(bad)
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("'addresses'");
        }
    }

    @Test
    void validatesEachKeyNamingIt() {
        InferenceConfig.Builder b = InferenceConfig.builder().addresses("127.0.0.1:1");
        assertThatThrownBy(() -> b.requestRetries(0).build()).hasMessageContaining("'request_retries': 0");
        assertThatThrownBy(
                        () -> b.requestRetries(3).requestTimeout(Duration.ZERO).build())
                .hasMessageContaining("'request_timeout': 0.0");
        assertThatThrownBy(() ->
                        b.requestTimeout(Duration.ofSeconds(1)).stickySlack(-1).build())
                .hasMessageContaining("'sticky_slack'");
        assertThatThrownBy(() -> b.stickySlack(8)
                        .retryBackoffInitial(Duration.ofSeconds(5))
                        .retryBackoffMax(Duration.ofSeconds(1))
                        .build())
                .hasMessageContaining("'retry_backoff_max': 1.0")
                .hasMessageContaining("retry_backoff_initial (5.0)");
        assertThatThrownBy(() -> b.retryBackoffInitial(Duration.ZERO)
                        .pauseGracePeriod(Duration.ofSeconds(-1))
                        .build())
                .hasMessageContaining("'pause_grace_period'");
    }

    @Test
    void readsSnakeCaseKeysWithDurationsInSeconds() {
        InferenceConfig c = InferenceConfig.fromMap(Map.of(
                "backend", "vllm:d2",
                "addresses", "127.0.0.1:1, 127.0.0.1:2",
                "request_timeout", 1.5,
                "request_retries", 5,
                "routing_strategy", "round_robin",
                "sticky_by_rid", false,
                "sticky_slack", "3",
                "health_check_interval", "0.25",
                "pause_grace_period", 2));
        assertThat(c.backend()).isEqualTo(Backend.VLLM);
        assertThat(c.dataParallelSize()).isEqualTo(2);
        assertThat(c.addresses()).containsExactly(new ServerAddress("127.0.0.1", 1), new ServerAddress("127.0.0.1", 2));
        assertThat(c.requestTimeout()).isEqualTo(Duration.ofMillis(1500));
        assertThat(c.requestRetries()).isEqualTo(5);
        assertThat(c.routingStrategy()).isEqualTo(RoutingStrategy.ROUND_ROBIN);
        assertThat(c.stickyByRid()).isFalse();
        assertThat(c.stickySlack()).isEqualTo(3);
        assertThat(c.healthCheckInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(c.pauseGracePeriod()).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void fromMapRejectsUnknownKeysAndWrongTypesNamingTheKey() {
        assertThatThrownBy(() ->
                        InferenceConfig.fromMap(Map.of("addresses", List.of("127.0.0.1:1"), "request_timeuot", 3)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'request_timeuot'")
                .hasMessageContaining("request_timeout");
        assertThatThrownBy(() ->
                        InferenceConfig.fromMap(Map.of("addresses", List.of("127.0.0.1:1"), "request_retries", 2.5)))
                .hasMessageContaining("'request_retries': 2.5 (allowed: an integer)");
        assertThatThrownBy(() ->
                        InferenceConfig.fromMap(Map.of("addresses", List.of("127.0.0.1:1"), "sticky_by_rid", "yes")))
                .hasMessageContaining("'sticky_by_rid'");
        assertThatThrownBy(() -> InferenceConfig.fromMap(
                        Map.of("addresses", List.of("127.0.0.1:1"), "routing_strategy", "random")))
                .hasMessageContaining(
                        "'routing_strategy': \"random\" (allowed: least_requests, round_robin, group_affinity or prefix_aware)");
        assertThatThrownBy(() ->
                        InferenceConfig.fromMap(Map.of("addresses", List.of("127.0.0.1:1"), "setup_timeout", "soon")))
                .hasMessageContaining("'setup_timeout'");
        assertThatThrownBy(() -> InferenceConfig.fromMap(Map.of("addresses", 5)))
                .hasMessageContaining("'addresses'");
    }
}
