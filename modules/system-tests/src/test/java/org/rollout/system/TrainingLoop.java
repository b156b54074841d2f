package org.rollout.system;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import org.rollout.api.TrainingBatch;

/**
 * A {@link CheckedTrainer} training on a thread of its own while a test injects faults: pull,
 * acknowledge, publish the next version, again, until {@link #close()}.
 *
 * <p>Options: a pause between steps (a trainer slower than generation), no publishing (versions come
 * from elsewhere), and trainer disconnects: with probability {@code disconnectChance} per step the
 * trainer pulls a batch and drops its connection without acknowledging it, then connects again
 * with the contact points in another order (through another node's gateway first); the engine must
 * deliver that batch's tasks again, and the checks go on over the new connection. Each disconnect
 * is counted as a fault of kind {@code trainer_disconnect} in the cluster's {@link Faults}.
 */
final class TrainingLoop implements AutoCloseable {
    private final CheckedTrainer trainer;
    private final TestCluster cluster;
    private final boolean publish;
    private final Duration pause;
    private final double disconnectChance;
    private final SplittableRandom random;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean running = true;
    private volatile Path corruptWeights;
    private volatile double corruptChance;
    private final Thread thread;

    private TrainingLoop(
            TestCluster cluster,
            CheckedTrainer trainer,
            boolean publish,
            Duration pause,
            double disconnectChance,
            long seed) {
        this.cluster = cluster;
        this.trainer = trainer;
        this.publish = publish;
        this.pause = pause;
        this.disconnectChance = disconnectChance;
        this.random = new SplittableRandom(seed);
        this.thread = Thread.ofPlatform().name("training-loop").daemon().start(this::run);
    }

    /** Starts training on its own thread. */
    static TrainingLoop start(
            TestCluster cluster,
            CheckedTrainer trainer,
            boolean publish,
            Duration pause,
            double disconnectChance,
            long seed) {
        return new TrainingLoop(cluster, trainer, publish, pause, disconnectChance, seed);
    }

    /**
     * From now on, with probability {@code chance} per step, also publishes {@code bad} (a corrupt
     * weight file) as the next version before the step ({@link CheckedTrainer#publishCorrupt}).
     */
    TrainingLoop withCorruptWeights(Path bad, double chance) {
        this.corruptWeights = bad;
        this.corruptChance = chance;
        return this;
    }

    private void run() {
        try {
            while (running) {
                Path bad = corruptWeights;
                if (bad != null && publish && random.nextDouble() < corruptChance) {
                    trainer.publishCorrupt(bad);
                }
                if (disconnectChance > 0 && random.nextDouble() < disconnectChance) {
                    disconnectMidBatch();
                } else {
                    trainer.step(Duration.ofSeconds(1), publish);
                }
                if (!pause.isZero()) {
                    Thread.sleep(pause.toMillis());
                }
            }
        } catch (InterruptedException e) {
            // close()
        } catch (Throwable e) {
            failure.set(e);
        }
    }

    /** Pulls a batch and goes away without acknowledging it; connects again elsewhere. */
    private void disconnectMidBatch() throws InterruptedException {
        Optional<TrainingBatch> b;
        try {
            b = trainer.pull(Duration.ofSeconds(1));
        } catch (RuntimeException e) {
            return; // a fail-over in progress: no batch to walk away with
        }
        if (b.isEmpty()) {
            return;
        }
        trainer.disconnect();
        cluster.faults().inject("trainer_disconnect");
        int n = cluster.nodeCount();
        int first = 1 + random.nextInt(n);
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = 1 + (first - 1 + i) % n;
        }
        trainer.reconnect(cluster.trainerClient(order));
        TestCluster.log(
                "trainer dropped batch " + b.get().batchId() + " unacknowledged and reconnected through node-" + first);
    }

    /** Stops training (after the step under way) and rethrows what broke the loop, if anything. */
    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(Duration.ofSeconds(150));
        if (thread.isAlive()) {
            thread.interrupt();
            thread.join(Duration.ofSeconds(10));
        }
        Throwable f = failure.get();
        if (f instanceof Error e) {
            throw e;
        }
        if (f != null) {
            throw new AssertionError("the training loop failed", f);
        }
    }

    /** Throws at once if the loop has failed (so that a test does not wait out its deadline). */
    void check() {
        Throwable f = failure.get();
        if (f != null) {
            throw new AssertionError("the training loop failed", f);
        }
    }
}
