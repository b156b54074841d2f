package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** A node's trainer gateway bound beyond loopback must have a token: refused at start otherwise. */
class NodeGatewayTokenTest {

    @Test
    void aGatewayOnAllInterfacesWithoutATokenIsRefusedAtStartNamingTheFlagAndTheVariable() {
        assumeTrue(System.getenv("ROLLOUT_GATEWAY_TOKEN") == null, "ROLLOUT_GATEWAY_TOKEN is set in this environment");
        var r = CheckConfigCommandTest.run("node", "--demo", "--gateway-host", "0.0.0.0", "--port", "0");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("'--gateway-host'", "0.0.0.0", "--gateway-token", "$ROLLOUT_GATEWAY_TOKEN");
        assertThat(r.out()).doesNotContain("node up", "gateway listening");
    }

    @Test
    void onlyLoopbackAddressesCountAsLoopback() {
        assertThat(NodeCommand.isLoopback("127.0.0.1")).isTrue();
        assertThat(NodeCommand.isLoopback("localhost")).isTrue();
        assertThat(NodeCommand.isLoopback("::1")).isTrue();
        assertThat(NodeCommand.isLoopback("0.0.0.0")).isFalse();
        assertThat(NodeCommand.isLoopback("10.0.0.5")).isFalse();
        assertThat(NodeCommand.isLoopback("node01")).isFalse();
    }
}
