package org.rollout.cli;

import java.io.PrintStream;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.rollout.cluster.ClusterRollout;
import org.rollout.cluster.EngineMetrics;
import org.rollout.cluster.RolloutCoordinator;
import org.rollout.trainer.RolloutStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The status line of a running {@code rollout node}: redrawn in place every 0.5 s on a terminal,
 * else printed every {@code --progress-every} seconds and logged as one structured line.
 */
final class NodeProgress {
    /** The periodic status as a structured log line (INFO; logback.xml, logback-json.xml). */
    private static final Logger STATUS_LOG = LoggerFactory.getLogger("org.rollout.node.status");

    private NodeProgress() {}

    /**
     * Starts printing {@code node}'s status to {@code out} on a daemon thread of its own.
     *
     * @return stops it
     */
    static AutoCloseable start(ClusterRollout node, String name, PrintStream out, int progressEverySeconds) {
        ScheduledExecutorService progress = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "node-progress");
            t.setDaemon(true);
            return t;
        });
        boolean terminal = System.console() != null;
        StatusLine statusLine = new StatusLine(0, System.nanoTime());
        Runnable tick = () -> {
            String line;
            try {
                RolloutStatus st = node.client().status(EngineMetrics.STATUS_TIMEOUT);
                RolloutCoordinator.Status c = node.client().coordinatorStatus(EngineMetrics.STATUS_TIMEOUT);
                line = statusLine.renderNode(name, node.groupsStarted(), st, c);
                if (!terminal) {
                    // One structured line per period for log collectors (JSON with logback-json.xml).
                    STATUS_LOG
                            .atInfo()
                            .setMessage("node status")
                            .addKeyValue("node", name)
                            .addKeyValue("groups_started_here", node.groupsStarted())
                            .addKeyValue("version", st.version())
                            .addKeyValue("accepted", st.accepted())
                            .addKeyValue("rejected", st.rejected())
                            .addKeyValue("running", st.running())
                            .addKeyValue("capacity", st.capacity())
                            .addKeyValue("tokens_generated", st.tokensGenerated())
                            .addKeyValue(
                                    "reward",
                                    st.lastStats()
                                            .getOrDefault("rollout", Map.of())
                                            .get("reward"))
                            .log();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                line = "node " + name + ": " + node.groupsStarted() + " groups started here | status unavailable: "
                        + e.getMessage();
            }
            if (terminal) {
                out.print("\r" + line);
                out.flush();
            } else {
                out.println(line);
            }
        };
        long period = terminal ? 500 : Math.max(1, progressEverySeconds) * 1000L;
        progress.scheduleAtFixedRate(tick, period, period, TimeUnit.MILLISECONDS);
        return progress::shutdownNow;
    }
}
