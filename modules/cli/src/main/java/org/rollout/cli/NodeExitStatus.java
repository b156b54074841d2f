package org.rollout.cli;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.rollout.cluster.ClusterRollout;

/** The exit status of a {@code rollout node} the JVM shuts down: 0 after a SIGTERM it has handled. */
final class NodeExitStatus {
    private NodeExitStatus() {}

    /** How long a SIGTERM'd node may take to drain, leave and close before the JVM's own status stands. */
    private static final Duration STOP_DEADLINE = Duration.ofSeconds(120);

    /**
     * A node stopped by SIGTERM (or SIGINT) exits 0 once it has drained, left the cluster and
     * closed what it runs: the JVM would otherwise report the signal (143), since a shutdown begun
     * by a signal ignores the exit status asked for later. A node stopped for any other reason
     * (downed, failed) keeps its own status.
     */
    static void exitZeroAfterSigterm(ClusterRollout node, CountDownLatch closed) {
        CoordinatedShutdown shutdown = CoordinatedShutdown.get(Adapter.toClassic(node.system()));
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            // Stopped for another reason (downed, failed): Pekko asked for this exit
                            // from the thread that completes the system's termination, which is also
                            // the one that would release the command's own thread; waiting here would
                            // hold the exit for the whole deadline. The JVM's own status stands.
                            if (shutdown.getShutdownReason()
                                    .filter(r -> r != CoordinatedShutdown.jvmExitReason())
                                    .isPresent()) {
                                return;
                            }
                            try {
                                if (closed.await(STOP_DEADLINE.toSeconds(), TimeUnit.SECONDS)
                                        && shutdown.getShutdownReason()
                                                .filter(r -> r == CoordinatedShutdown.jvmExitReason())
                                                .isPresent()) {
                                    System.out.flush();
                                    System.err.flush();
                                    Runtime.getRuntime().halt(0);
                                }
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        },
                        "node-exit-status"));
    }
}
