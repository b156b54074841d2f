package org.rollout.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClientConfigTest {

    @Test
    void contactPointsLoseTheirTrailingSlashAndKeepAPathPrefix() {
        ClientConfig c = ClientConfig.of("http://127.0.0.1:8470/", "HTTPS://127.0.0.1:8471/rollout/");
        assertThat(c.contactPoints())
                .containsExactly(URI.create("http://127.0.0.1:8470"), URI.create("https://127.0.0.1:8471/rollout"));
    }

    @Test
    void refusesNoContactPoints() {
        assertThatThrownBy(() -> ClientConfig.of(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("contact_points must name at least one gateway URL");
    }

    @Test
    void refusesAContactPointThatIsNotHttp() {
        assertThatThrownBy(() -> ClientConfig.of("pekko://rollout@127.0.0.1:2552"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("contact point 'pekko://rollout@127.0.0.1:2552' must be an http:// or https:// URL of a"
                        + " trainer gateway");
    }

    @Test
    void refusesAContactPointWithAQuery() {
        assertThatThrownBy(() -> ClientConfig.of("http://127.0.0.1:1/?x=1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("contact point 'http://127.0.0.1:1/?x=1' must not have a query or fragment");
    }

    @Test
    void refusesAContactPointThatIsNotAUrl() {
        assertThatThrownBy(() -> ClientConfig.of("http://[bad"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("contact point 'http://[bad' is not a URL: ");
    }

    @Test
    void refusesATokenWithSpaces() {
        assertThatThrownBy(() -> ClientConfig.of("http://127.0.0.1:1").withToken("two words"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token must be printable ASCII without spaces (it travels in an Authorization header)");
    }

    @Test
    void refusesANonPositiveTimeoutNamingIt() {
        assertThatThrownBy(() -> ClientConfig.of("http://127.0.0.1:1").withPollWait(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("poll_wait must be > 0, got PT0S");
    }

    @Test
    void refusesAMaxBackoffBelowTheInitialOne() {
        assertThatThrownBy(() -> ClientConfig.of("http://127.0.0.1:1")
                        .withRetry(Duration.ofSeconds(2), Duration.ofSeconds(1), Duration.ofSeconds(10)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retry_max_backoff (PT1S) must not be below retry_initial_backoff (PT2S)");
    }

    @Test
    void neverShowsTheToken() {
        ClientConfig c = ClientConfig.of("http://127.0.0.1:1").withToken("s3cret-token");
        assertThat(c.toString()).doesNotContain("s3cret").contains("token=(set)");
    }

    @Test
    void anUnreadableTrustStoreIsNamed() {
        assertThatThrownBy(() -> ClientConfig.of("https://127.0.0.1:1")
                        .withTrustStore(java.nio.file.Path.of("/nonexistent/ks.p12"), "pw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("cannot read the trust store /nonexistent/ks.p12: ");
    }
}
