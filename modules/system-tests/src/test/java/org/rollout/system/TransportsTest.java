package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.time.Duration;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The end-to-end job of {@link ClusterEndToEndTest} over the other transports of {@code
 * cluster-config/}: Artery over Aeron UDP, and over TLS 1.3 with mutual authentication, where a
 * node presenting a certificate the cluster's CA did not sign never joins.
 */
@Timeout(300)
class TransportsTest {
    private static final int STEPS = 15;
    private static final Duration ROGUE_WINDOW = Duration.ofSeconds(20);
    /** How long after the window the job waits for the rogue node's first handshake to be refused. */
    private static final Duration HANDSHAKE_DEADLINE = Duration.ofSeconds(90);

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void shouldRunAJobOverAeronUdp() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withTransport(TestCluster.Transport.AERON_UDP)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            for (int i = 1; i <= 3; i++) {
                assertThat(c.nodeLog(i))
                        .as("node-%d's log", i)
                        .anyMatch(l -> l.contains("Remoting started with transport [Artery aeron-udp]"));
            }
            NodeLossTest.steps(t, STEPS);
            t.drain(Duration.ofSeconds(90));
            RunReport.of(run.testName(), c, t, new Faults())
                    .with("transport", "Aeron UDP (cluster-config/aeron.conf)")
                    .printAndAssertClean();
        }
    }

    @Test
    void shouldRunAJobOverMutualTlsAndNeverAdmitANodeWithAnUntrustedCertificate() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(3)
                        .withTransport(TestCluster.Transport.TLS)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            for (int i = 1; i <= 3; i++) {
                assertThat(c.nodeLog(i))
                        .as("node-%d's log", i)
                        .anyMatch(l -> l.contains("Remoting started with transport [Artery tls-tcp]"));
            }
            NodeLossTest.steps(t, STEPS / 2);
            ManagedProcess rogue = c.startRogueNode();
            // The job goes on while the rogue node tries to join.
            long deadline = System.nanoTime() + ROGUE_WINDOW.toNanos();
            while (System.nanoTime() - deadline < 0) {
                t.step(Duration.ofSeconds(1), true);
                assertThat(rogue.find(TestCluster.NODE_UP))
                        .as("the rogue node is Up")
                        .isEmpty();
            }
            assertThat(rogue.find(TestCluster.NODE_UP)).isEmpty();
            String rogueAddress = rogue.command().get(rogue.command().indexOf("--port") + 1);
            Pattern joined = Pattern.compile("127\\.0\\.0\\.1:" + rogueAddress + "\\].*(JOINING|Up|Welcome)");
            for (int i = 1; i <= 3; i++) {
                assertThat(c.nodeLog(i))
                        .as("node-%d's log", i)
                        .noneMatch(l -> joined.matcher(l).find());
            }
            // On a loaded machine the rogue node may start after the window: the job goes on
            // until its first handshake has been refused (or a deadline passes).
            long handshakeDeadline = System.nanoTime() + HANDSHAKE_DEADLINE.toNanos();
            boolean refusedHandshake = refusedHandshake(c, rogue);
            while (!refusedHandshake && System.nanoTime() - handshakeDeadline < 0) {
                t.step(Duration.ofSeconds(1), true);
                assertThat(rogue.find(TestCluster.NODE_UP))
                        .as("the rogue node is Up")
                        .isEmpty();
                refusedHandshake = refusedHandshake(c, rogue);
            }
            rogue.kill();

            NodeLossTest.steps(t, STEPS);
            t.drain(Duration.ofSeconds(90));
            RunReport.of(run.testName(), c, t, new Faults())
                    .with("transport", "TLS 1.3, mutual authentication (cluster-config/tls.conf)")
                    .with("rogue node Up within " + ROGUE_WINDOW, "no")
                    .with("refused handshake logged", refusedHandshake)
                    .printAndAssertClean();
            assertThat(refusedHandshake).as("a refused TLS handshake is logged").isTrue();
        }
    }

    private static boolean refusedHandshake(TestCluster c, ManagedProcess rogue) throws IOException {
        return c.nodeLog(1).stream().anyMatch(l -> l.contains("SSLHandshakeException"))
                || rogue.lines().stream().anyMatch(l -> l.contains("SSLHandshakeException"));
    }
}
