package org.rollout.trainer.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.StatsPage;
import org.rollout.trainer.VersionStats;

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
                Map.of("rollout", Map.of("reward", 0.25, "group_size", 8.0)),
                3);
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
                        + "\"held_outcomes\":0,\"held_batches\":[],\"rejected_by_reason\":{},\"last_stats\":{}}");
    }

    @Test
    void heldBatchesReadBackEqualAndAreAbsentFromAnOlderGateway() {
        RolloutStatus s = new RolloutStatus(
                4,
                3,
                20,
                2,
                -1,
                5,
                2,
                0,
                12345,
                Map.of(),
                Map.of(),
                0,
                java.util.List.of(
                        new org.rollout.trainer.HeldBatch(7, 4, "host-a:412:9f3c", true, 12_500),
                        new org.rollout.trainer.HeldBatch(8, 4, "/127.0.0.1:51234", false, 590_000)));
        String json = new String(GatewayJson.status(s), StandardCharsets.UTF_8);
        assertThat(json)
                .contains("\"held_batches\":[{\"batch_id\":7,\"groups\":4,\"holder\":\"host-a:412:9f3c\","
                        + "\"leased\":true,\"returns_in_s\":12.5}");
        assertThat(GatewayJson.parseStatus(utf8(json))).isEqualTo(s);
        assertThat(GatewayJson.parseStatus(utf8(json.replaceAll(",\"held_batches\":\\[[^\\]]*\\]", "")))
                        .heldBatches())
                .isEmpty();
    }

    @Test
    void aLeaseRenewalNamesTheFieldAtFault() {
        org.rollout.trainer.BatchLease lease =
                GatewayJson.parseRenewRequest(utf8("{\"holder\":\"h:1:ab\",\"lease\":15}"));
        assertThat(lease.holder()).isEqualTo("h:1:ab");
        assertThat(lease.duration()).isEqualTo(java.time.Duration.ofSeconds(15));
        assertThat(GatewayJson.parseRenewed(GatewayJson.renewed(lease, java.util.List.of(3L, 4L))))
                .containsExactly(3L, 4L);
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> GatewayJson.parseRenewRequest(utf8("{\"holder\":\"h\",\"lease\":0}")))
                .hasMessageContaining("'lease'");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> GatewayJson.parseRenewRequest(utf8("{\"holder\":\" \",\"lease\":5}")))
                .hasMessageContaining("'holder'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> GatewayJson.parseRenewRequest(utf8("{\"lease\":5}")))
                .hasMessageContaining("'holder'");
    }

    @Test
    void aStatusFromAGatewayThatDoesNotSendHeldOutcomesReadsAsNoneHeld() {
        String json = "{\"version\":1,\"running\":2,\"accepted\":3,\"rejected\":4,\"capacity\":5,"
                + "\"buffered_groups\":6,\"unacknowledged_batches\":7,\"eval_running\":8,\"tokens_generated\":9,"
                + "\"rejected_by_reason\":{},\"last_stats\":{}}";
        assertThat(GatewayJson.parseStatus(utf8(json)).heldOutcomes()).isZero();
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

    @Test
    void aStatsLineOfTheFileIsTypedAndWrittenBackWithTheSameNumbers() {
        String line = "{\"version\":3,\"scope\":\"rollout\",\"groups\":16,\"accepted\":14,\"rejected\":2,"
                + "\"rejected_reasons\":{\"returned_none\":2},\"tokens\":1820,\"staleness_mean\":0.4,"
                + "\"staleness_max\":1,\"reward\":0.61,\"reward__count\":56.0}";
        VersionStats s = GatewayJson.parseStatsLine(line);
        assertThat(s)
                .isEqualTo(new VersionStats(
                        3,
                        "rollout",
                        16,
                        14,
                        2,
                        Map.of("returned_none", 2L),
                        1820,
                        Map.of("staleness_mean", 0.4, "staleness_max", 1.0, "reward", 0.61, "reward__count", 56.0)));
        assertThat(s.scalars().keySet()).containsExactly("staleness_mean", "staleness_max", "reward", "reward__count");
        assertThat(s.scalar("reward")).hasValue(0.61);
        assertThat(s.scalar("loss")).isEmpty();
        StatsPage page = new StatsPage(java.util.List.of(s), 4);
        assertThat(new String(GatewayJson.stats(page), StandardCharsets.UTF_8))
                .isEqualTo("{\"lines\":[" + line + "],\"complete_below\":4}");
        assertThat(GatewayJson.parseStats(GatewayJson.stats(page))).isEqualTo(page);
    }

    @Test
    void aNonFiniteStatisticInTheFileTravelsAsNull() {
        VersionStats s = GatewayJson.parseStatsLine("{\"version\":0,\"scope\":\"eval-rollout\",\"groups\":1,"
                + "\"accepted\":0,\"rejected\":1,\"rejected_reasons\":{},\"tokens\":0,\"reward\":NaN}");
        assertThat(s.scalars().get("reward")).isNaN();
        String json = new String(GatewayJson.stats(new StatsPage(java.util.List.of(s), 1)), StandardCharsets.UTF_8);
        assertThat(json).contains("\"reward\":null");
        assertThat(GatewayJson.parseStats(utf8(json)).lines().get(0).scalars().get("reward"))
                .isNaN();
    }

    @Test
    void aMalformedStatsBodyNamesTheField() {
        assertThatThrownBy(() -> GatewayJson.parseStats(utf8("{\"lines\":{}}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("stats: field 'lines' must be an array");
        assertThatThrownBy(() -> GatewayJson.parseStats(utf8("{\"lines\":[{\"version\":1}],\"complete_below\":2}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("stats line: field 'scope' must be a string, got null");
        assertThatThrownBy(() -> GatewayJson.parseStats(utf8("{\"lines\":[]}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("stats: field 'complete_below' must be an integer, got null");
    }
}
