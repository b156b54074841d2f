package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * File-descriptor exhaustion on a gateway: a node started under {@code ulimit -n 256} is sent far
 * more idle TCP connections than it has descriptors left. A trainer that already holds a connection
 * goes on training through it, and once the idle connections close, new connections are served
 * again; nothing the trainer was promised is lost.
 */
@Timeout(360)
class GatewayFileLimitTest {
    private static final int FILE_LIMIT = 256;
    private static final int IDLE_CONNECTIONS = 600;

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void idleConnectionsBeyondTheFileLimitDoNotStopATrainerThatHoldsOne() throws Exception {
        try (TestCluster c = TestCluster.aCluster(run)
                        .withNodes(1)
                        .withModelServers(2)
                        .withNodeFileLimit(FILE_LIMIT)
                        .start();
                CheckedTrainer t = c.checkedTrainer(1, false)) {
            steps(t, 3);
            long pid = c.pidOf(1);
            int filesBefore = openFiles(pid);
            URI gateway = URI.create(c.gatewayUrls().getFirst());
            InetSocketAddress address = new InetSocketAddress(gateway.getHost(), gateway.getPort());
            List<Socket> idle = java.util.Collections.synchronizedList(new ArrayList<>());
            java.util.concurrent.atomic.AtomicInteger notConnected = new java.util.concurrent.atomic.AtomicInteger();
            int peak;
            int acknowledgedUnderPressure;
            long connectStarted = System.nanoTime();
            try {
                // All at once: past the node's limit its accept queue fills and each further connect
                // waits out its 1 s timeout; one after another, those waits were most of the test.
                try (java.util.concurrent.ExecutorService connecting =
                        java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                    for (int i = 0; i < IDLE_CONNECTIONS; i++) {
                        connecting.submit(() -> {
                            Socket s = new Socket();
                            try {
                                s.connect(address, 1000);
                                idle.add(s);
                            } catch (IOException e) {
                                s.close();
                                notConnected.incrementAndGet();
                            }
                            return null;
                        });
                    }
                }
                TestCluster.log(IDLE_CONNECTIONS + " connection attempts in "
                        + (System.nanoTime() - connectStarted) / 1_000_000 + " ms");
                // The node has used up its descriptors on them.
                peak = Waits.until("node-1 at its file limit (" + FILE_LIMIT + ")", Duration.ofSeconds(30), () -> {
                    int open = openFiles(pid);
                    return open >= FILE_LIMIT - 2 ? Optional.of(open) : Optional.empty();
                });
                // The trainer's own connection still serves pulls, acknowledgements and publishes.
                int before = t.batchesAcknowledged();
                steps(t, before + 3);
                acknowledgedUnderPressure = t.batchesAcknowledged() - before;
                assertThat(c.isAlive(1)).as("node-1 alive at its file limit").isTrue();
            } finally {
                synchronized (idle) {
                    for (Socket s : idle) {
                        s.close();
                    }
                }
            }
            // Recovered: a new connection (a new trainer client) is served again.
            t.reconnect(c.trainerClient());
            int before = t.batchesAcknowledged();
            steps(t, before + 2);
            int filesAfter = Waits.until("node-1's descriptors released", Duration.ofSeconds(60), () -> {
                int open = openFiles(pid);
                return open < FILE_LIMIT - 32 ? Optional.of(open) : Optional.empty();
            });
            t.drain(Duration.ofSeconds(120));
            RunReport report = RunReport.of(run.testName(), c, t, new Faults())
                    .with("idle connections opened (not connected)", idle.size() + " (" + notConnected.get() + ")")
                    .with(
                            "node-1 open files: before, at the limit, after",
                            filesBefore + ", " + peak + ", " + filesAfter)
                    .with("batches acknowledged at the limit", acknowledgedUnderPressure);
            report.printAndAssertClean();
            // A segment that could not open a socket is retried, not failed; a group fails only when
            // every server stays out of reach past the retries (2 of about 40 in one CI run), and is
            // then accounted as rejected 'failed' (printAndAssertClean above): a few, never most.
            List<String> rejected = new ArrayList<>();
            long outcomes = 0;
            for (String line : c.nodeLog(1)) {
                if (line.contains("rollout.tasks - outcome ")) {
                    outcomes++;
                    if (line.contains(" accepted=false ")) {
                        rejected.add(line);
                    }
                }
            }
            assertThat(rejected)
                    .as("rejected tasks")
                    .allSatisfy(l -> assertThat(l).contains("reason=failed"));
            assertThat(rejected.size())
                    .as("rejected tasks of " + outcomes + ": " + rejected)
                    .isLessThanOrEqualTo((int) (outcomes / 10));
        }
    }

    private static void steps(CheckedTrainer t, int acknowledged) throws InterruptedException {
        Waits.untilTrue(acknowledged + " acknowledged batches", Duration.ofSeconds(120), () -> {
            t.step(Duration.ofSeconds(2), true);
            return t.batchesAcknowledged() >= acknowledged;
        });
    }

    /** The number of files (sockets included) process {@code pid} has open, from {@code /proc}. */
    private static int openFiles(long pid) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            return (int) fds.count();
        }
    }
}
