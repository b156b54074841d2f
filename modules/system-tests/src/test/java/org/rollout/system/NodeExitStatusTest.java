package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** How `rollout node` ends: a node that fails after it joined exits with a failure status. */
@Timeout(240)
class NodeExitStatusTest {

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void aNodeWhoseGatewayPortIsTakenSaysSoAndExitsWithAFailureStatus() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(1)
                        .withModelServers(1)
                        .start();
                ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ManagedProcess extra = c.startExtraNode("node-busy-gateway", taken.getLocalPort());
            int status = extra.awaitExit(Duration.ofSeconds(120));
            // One line naming the port and the flag (no stack trace).
            assertThat(extra.find(Pattern.compile("cannot listen on .*:" + taken.getLocalPort() + ".*--gateway-port")))
                    .isPresent();
            assertThat(status).as("exit status of a node that failed").isNotZero();
        }
    }
}
