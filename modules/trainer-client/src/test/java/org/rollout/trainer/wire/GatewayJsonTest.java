package org.rollout.trainer.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutStatus;

class GatewayJsonTest {

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void statusReadsBackEqual() {
        RolloutStatus s = new RolloutStatus(
                4,
                3,
                20,
                2,
                -1,
                5,
                1,
                0,
                12345,
                Map.of("returned_none", 2L),
                Map.of("rollout", Map.of("reward", 0.25, "group_size", 8.0)));
        assertThat(GatewayJson.parseStatus(GatewayJson.status(s))).isEqualTo(s);
    }

    @Test
    void nonFiniteStatisticsTravelAsNullAndComeBackAsNaN() {
        RolloutStatus s =
                new RolloutStatus(0, 0, 0, 0, 0, 0, 0, 0, 0, Map.of(), Map.of("rollout", Map.of("reward", Double.NaN)));
        String json = new String(GatewayJson.status(s), StandardCharsets.UTF_8);
        assertThat(json).contains("\"last_stats\":{\"rollout\":{\"reward\":null}}");
        assertThat(GatewayJson.parseStatus(utf8(json))
                        .lastStats()
                        .get("rollout")
                        .get("reward"))
                .isNaN();
    }

    @Test
    void statusUsesSnakeCaseKeys() {
        RolloutStatus s = new RolloutStatus(1, 2, 3, 4, 5, 6, 7, 8, 9, Map.of(), Map.of());
        assertThat(new String(GatewayJson.status(s), StandardCharsets.UTF_8))
                .isEqualTo("{\"version\":1,\"running\":2,\"accepted\":3,\"rejected\":4,\"capacity\":5,"
                        + "\"buffered_groups\":6,\"unacknowledged_batches\":7,\"eval_running\":8,\"tokens_generated\":9,"
                        + "\"rejected_by_reason\":{},\"last_stats\":{}}");
    }

    @Test
    void aStatusWithoutAFieldNamesIt() {
        assertThatThrownBy(() -> GatewayJson.parseStatus(utf8("{\"version\":1}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("status: field 'rejected_by_reason' must be an object");
    }

    @Test
    void publishResultReadsBackEqual() {
        PublishResult r = new PublishResult(3, Duration.ofNanos(12_345_678), 1, Map.of("127.0.0.1:30001", "HTTP 500"));
        assertThat(GatewayJson.parsePublishResult(GatewayJson.publishResult(r))).isEqualTo(r);
    }

    @Test
    void publishRequestReadsBack() {
        assertThat(GatewayJson.parsePublishRequest(GatewayJson.publishRequest(7, "/w/v7.rlm")))
                .isEqualTo(new GatewayJson.PublishRequest(7, "/w/v7.rlm"));
    }

    @Test
    void aPublishRequestWithANegativeVersionIsRefusedNamingTheField() {
        assertThatThrownBy(() -> GatewayJson.parsePublishRequest(utf8("{\"version\":-1,\"path\":\"/w\"}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("publish request: field 'version' must be an integer in [0, 2^31), got -1");
    }

    @Test
    void aPublishRequestWithAFractionalVersionIsRefused() {
        assertThatThrownBy(() -> GatewayJson.parsePublishRequest(utf8("{\"version\":1.5,\"path\":\"/w\"}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("publish request: field 'version' must be an integer, got 1.5");
    }

    @Test
    void aPublishRequestWithoutAPathIsRefused() {
        assertThatThrownBy(() -> GatewayJson.parsePublishRequest(utf8("{\"version\":1,\"path\":\" \"}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "publish request: field 'path' must be a non-blank string (the weights file the servers load)");
    }

    @Test
    void aPublishRequestThatIsNotJsonSaysSo() {
        assertThatThrownBy(() -> GatewayJson.parsePublishRequest(utf8("version=1")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("publish request: the body is not JSON: ");
    }

    @Test
    void ackReadsBack() {
        assertThat(GatewayJson.parseAck(GatewayJson.ack(12, false))).isEqualTo(new GatewayJson.AckReply(12, false));
    }

    @Test
    void errorBodyHasCodeAndMessage() {
        byte[] body = GatewayJson.error("unauthorized", "bearer token does not match");
        assertThat(new String(body, StandardCharsets.UTF_8))
                .isEqualTo("{\"error\":{\"message\":\"bearer token does not match\",\"code\":\"unauthorized\"}}");
        assertThat(GatewayJson.parseError(body))
                .isEqualTo(new GatewayJson.ErrorBody("unauthorized", "bearer token does not match"));
    }

    @Test
    void anErrorBodyThatIsNotTheGatewaysIsShownByItsText() {
        assertThat(GatewayJson.parseError(utf8("<html>502 Bad Gateway</html>")))
                .isEqualTo(new GatewayJson.ErrorBody("unknown", "<html>502 Bad Gateway</html>"));
    }
}
