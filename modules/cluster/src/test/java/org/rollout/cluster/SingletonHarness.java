package org.rollout.cluster;

import com.typesafe.config.Config;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSession;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.core.StalenessBudget;
import org.rollout.core.TensorDicts;
import org.rollout.core.TrajectoryRows;
import org.rollout.inference.WeightUpdateReport;
import org.rollout.inference.WeightUpdater;
import org.rollout.trainer.PublishResult;

/**
 * The engine's singletons — {@link RolloutCoordinator}, {@link Collector}, {@link WeightVersion} —
 * the real actors, in one actor system, against simulated runners and servers, for the {@code
 * bench singletons} benchmark. It lives in the cluster's package (the collector and its messages
 * are package-private) among the cluster module's test sources, and is the one class of the module's
 * test jar ({@code rollout-cluster}, type {@code test-jar}), which the benchmarks module depends on:
 * nothing here ships with the engine, and no package is split across modules.
 *
 * <pre>
 *   coordinator    real coordinator ──RunGroup──► R simulated runners ──GroupFinished──► stand-in collector
 *                  (answers TaskFinished at once, acknowledges a batch per B accepted groups)
 *   collector      feeder (stands in for coordinator and runners: W groups outstanding) ──GroupFinished──►
 *                  real collector ──batches──► trainer thread (pull + ack, as LocalRolloutClient)
 *   pipeline       real coordinator + real collector + R simulated runners + trainer thread
 *   weights        real weight version, R simulated runners (prepare answered at once), M simulated
 *                  servers: the real WeightUpdater over an in-process HttpClient that answers each
 *                  control call (no sockets: thousands of HTTP servers do not fit one machine)
 * </pre>
 *
 * <p>A simulated runner registers under {@link GroupRunner#SERVICE_KEY} like a real one and
 * answers every {@code RunGroup} at once with an accepted synthetic group (one prebuilt {@link
 * TensorDict} of {@code rows × tokens}, shared by every group: in one actor system nothing is
 * copied or serialized, so the collector's MB/s is the group bytes it takes charge of, not bytes
 * it moves).
 */
public final class SingletonHarness {
    private SingletonHarness() {}

    /** A synthetic group's rows: {@code rows} single-turn rows of {@code tokens} tokens (prompt 1/8). */
    public static TensorDict groupRows(int rows, int tokens) {
        int prompt = Math.max(1, tokens / 8);
        int output = Math.max(1, tokens - prompt);
        List<TensorDict> r = new ArrayList<>(rows);
        for (int i = 0; i < rows; i++) {
            int[] p = new int[prompt];
            Arrays.fill(p, 'a' + i % 26);
            int[] out = new int[output];
            float[] logprobs = new float[output];
            int[] versions = new int[output];
            for (int k = 0; k < output; k++) {
                out[k] = 32 + (k * 13 + i) % 95;
                logprobs[k] = -0.01f * (k % 300);
            }
            r.add(TrajectoryRows.singleTurn(
                    ModelResponse.of(p, out, logprobs, versions, StopReason.STOP, Duration.ofSeconds(1)),
                    i / (double) rows));
        }
        return TensorDicts.concatPadded(r);
    }

    /** The bytes a group of these rows is reckoned at when it crosses nodes ({@link LargePayloads}). */
    public static long estimatedBytes(TensorDict rows) {
        return LargePayloads.estimatedBytes(rows);
    }

    private static TrainingGroup group(long taskId, int attempt, TensorDict rows, int version) {
        return new TrainingGroup(
                taskId, attempt, rows, new int[] {0}, new int[] {rows.batchSize()}, version, version, version, version);
    }

    private static Collector.GroupFinished accepted(
            long taskId, int attempt, int version, TensorDict rows, long tokens) {
        return new Collector.GroupFinished(
                taskId,
                attempt,
                false,
                version,
                version,
                new Collector.Accepted(group(taskId, attempt, rows, version)),
                Map.of("reward_mean", 0.5, "accepted_slots", (double) rows.batchSize()),
                ScalarStats.Totals.EMPTY,
                tokens);
    }

    // ---- simulated runners ----

    /** Counts events and notes when the count reaches a mark. */
    public static final class Counter {
        private final AtomicLong count = new AtomicLong();
        private volatile long mark = Long.MAX_VALUE;
        private volatile CountDownLatch reached = new CountDownLatch(1);
        private volatile long reachedAt;

        void increment() {
            long v = count.incrementAndGet();
            if (v == mark) {
                reachedAt = System.nanoTime();
                reached.countDown();
            }
        }

        public long get() {
            return count.get();
        }

        /**
         * Waits until the count reaches {@code n} (counting from now on), at most {@code timeout};
         * returns the {@link System#nanoTime} at which it did.
         */
        public long awaitCount(long n, Duration timeout, String what) throws InterruptedException, TimeoutException {
            CountDownLatch latch = new CountDownLatch(1);
            reached = latch;
            mark = n;
            if (count.get() >= n) {
                return System.nanoTime();
            }
            if (!latch.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new TimeoutException(what + ": " + count.get() + " of " + n + " after " + timeout);
            }
            return reachedAt;
        }
    }

    /**
     * A simulated runner: registers as a runner, answers {@code RunGroup} at once with an accepted
     * group of {@code rows}, {@code PrepareWeightUpdate} at once; counts both.
     */
    static Behavior<GroupRunner.Command> simulatedRunner(
            String node, int capacity, TensorDict rows, long tokensPerGroup, Counter dispatched, Counter prepared) {
        return simulatedRunner(node, capacity, Hold.NONE, rows, tokensPerGroup, dispatched, prepared);
    }

    /**
     * How long a simulated runner keeps a task running: {@code held} tasks at once (a task that
     * comes in beyond them ends the oldest), and no task longer than {@code maxAge} (zero: no limit).
     * {@link #NONE} ends each task at once. A held task is an entry in the runner's queue, not an
     * actor, so one benchmark JVM holds the fleet's ~160,000 open tasks.
     */
    public record Hold(int held, Duration maxAge) {
        public static final Hold NONE = new Hold(0, Duration.ZERO);

        public Hold {
            if (held < 0 || maxAge.isNegative()) {
                throw new IllegalArgumentException("held tasks and their age must not be negative");
            }
        }

        boolean none() {
            return held == 0 && maxAge.isZero();
        }
    }

    /** A task a simulated runner runs: ended (its group sent) once displaced or too old. */
    private record HeldTask(long taskId, int attempt, int version, ActorRef<Collector.Command> collector, long at) {}

    /** The runner's own timer: ends the tasks that reached their age. */
    private record EndDue() {}

    /**
     * A simulated runner that keeps tasks running as {@code hold} says, then ends each with an
     * accepted group; it keeps the outcomes it sent until the coordinator says {@code Forget}, and
     * answers {@code GetHoldings} and {@code Resend} as a real runner does, so that a successor
     * coordinator recovers from it. Its capacity is {@code hold.held() + spare}.
     */
    static Behavior<GroupRunner.Command> simulatedRunner(
            String node,
            int spare,
            Hold hold,
            TensorDict rows,
            long tokensPerGroup,
            Counter dispatched,
            Counter prepared) {
        int capacity = hold.held() + spare;
        if (hold.none()) {
            return Behaviors.setup(ctx -> {
                ctx.getSystem().receptionist().tell(Receptionist.register(GroupRunner.SERVICE_KEY, ctx.getSelf()));
                return Behaviors.receive(GroupRunner.Command.class)
                        .onMessage(GroupRunner.RunGroup.class, run -> {
                            dispatched.increment();
                            run.collector()
                                    .tell(accepted(
                                            run.taskId(), run.attempt(), run.dispatchVersion(), rows, tokensPerGroup));
                            return Behaviors.same();
                        })
                        .onMessage(GroupRunner.GetInfo.class, g -> {
                            g.replyTo().tell(new GroupRunner.Info(ctx.getSelf(), node, capacity, 0));
                            return Behaviors.same();
                        })
                        .onMessage(GroupRunner.GetHoldings.class, g -> {
                            g.replyTo().tell(new GroupRunner.Holdings(ctx.getSelf(), node, List.of()));
                            return Behaviors.same();
                        })
                        .onMessage(GroupRunner.PrepareWeightUpdate.class, p -> {
                            prepared.increment();
                            p.replyTo().tell(new WeightVersion.RunnerPrepared(p.updateId(), ctx.getSelf()));
                            return Behaviors.same();
                        })
                        .onAnyMessage(m -> Behaviors.same()) // Forget, CancelGroup, Abandon…, Resend
                        .build();
            });
        }
        long maxAge = hold.maxAge().toNanos();
        return Behaviors.<Object>setup(ctx -> Behaviors.<Object>withTimers(timers -> {
                    ActorRef<GroupRunner.Command> self = ctx.getSelf().narrow();
                    ctx.getSystem().receptionist().tell(Receptionist.register(GroupRunner.SERVICE_KEY, self));
                    if (maxAge > 0) {
                        timers.startTimerWithFixedDelay(new EndDue(), Duration.ofMillis(50));
                    }
                    java.util.ArrayDeque<HeldTask> running = new java.util.ArrayDeque<>();
                    // Outcomes sent and not yet forgotten: task id → attempt.
                    Map<Long, Integer> ended = new java.util.HashMap<>();
                    java.util.function.Consumer<HeldTask> end = r -> {
                        ended.put(r.taskId(), r.attempt());
                        r.collector().tell(accepted(r.taskId(), r.attempt(), r.version(), rows, tokensPerGroup));
                    };
                    return Behaviors.receive(Object.class)
                            .onMessage(GroupRunner.RunGroup.class, run -> {
                                dispatched.increment();
                                running.addLast(new HeldTask(
                                        run.taskId(),
                                        run.attempt(),
                                        run.dispatchVersion(),
                                        run.collector(),
                                        System.nanoTime()));
                                while (running.size() > hold.held()) {
                                    end.accept(running.pollFirst());
                                }
                                return Behaviors.same();
                            })
                            .onMessage(EndDue.class, d -> {
                                long now = System.nanoTime();
                                while (!running.isEmpty()
                                        && now - running.peekFirst().at() >= maxAge) {
                                    end.accept(running.pollFirst());
                                }
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.Forget.class, f -> {
                                f.taskIds().forEach(ended::remove);
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.CancelGroup.class, c -> {
                                running.removeIf(r -> r.taskId() == c.taskId() && r.attempt() == c.attempt());
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.GetHoldings.class, g -> {
                                List<GroupRunner.Held> held = new ArrayList<>(running.size() + ended.size());
                                List<HeldTask> moved = new ArrayList<>(running.size());
                                for (HeldTask r : running) {
                                    held.add(new GroupRunner.Held(r.taskId(), r.attempt(), false, false));
                                    moved.add(
                                            new HeldTask(r.taskId(), r.attempt(), r.version(), g.collector(), r.at()));
                                }
                                running.clear();
                                running.addAll(moved); // outcomes go to the collector named from now on
                                ended.forEach((id, attempt) -> held.add(new GroupRunner.Held(id, attempt, true, true)));
                                g.replyTo().tell(new GroupRunner.Holdings(self, node, held));
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.Resend.class, r -> {
                                for (Long id : r.taskIds()) {
                                    Integer attempt = ended.get(id);
                                    if (attempt != null) {
                                        r.collector().tell(accepted(id, attempt, 0, rows, tokensPerGroup));
                                    }
                                }
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.GetInfo.class, g -> {
                                g.replyTo().tell(new GroupRunner.Info(self, node, capacity, running.size()));
                                return Behaviors.same();
                            })
                            .onMessage(GroupRunner.PrepareWeightUpdate.class, p -> {
                                prepared.increment();
                                p.replyTo().tell(new WeightVersion.RunnerPrepared(p.updateId(), self));
                                return Behaviors.same();
                            })
                            .onAnyMessage(m -> Behaviors.same())
                            .build();
                }))
                .narrow();
    }

    private static void spawnRunners(
            org.apache.pekko.actor.typed.javadsl.ActorContext<Void> ctx,
            int runners,
            int capacity,
            TensorDict rows,
            long tokensPerGroup,
            Counter dispatched,
            Counter prepared) {
        spawnRunners(ctx, runners, capacity, Hold.NONE, rows, tokensPerGroup, dispatched, prepared);
    }

    private static void spawnRunners(
            org.apache.pekko.actor.typed.javadsl.ActorContext<Void> ctx,
            int runners,
            int spare,
            Hold hold,
            TensorDict rows,
            long tokensPerGroup,
            Counter dispatched,
            Counter prepared) {
        for (int i = 0; i < runners; i++) {
            ctx.spawn(
                    simulatedRunner("sim-" + i, spare, hold, rows, tokensPerGroup, dispatched, prepared),
                    "runner-" + i);
        }
    }

    /** Waits until the Receptionist lists {@code n} runners. */
    private static void awaitRunners(ActorSystem<Void> system, int n, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Receptionist.Listing l = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(
                            system.receptionist(),
                            r -> Receptionist.find(GroupRunner.SERVICE_KEY, r),
                            Duration.ofSeconds(10),
                            system.scheduler())
                    .toCompletableFuture()
                    .get(15, TimeUnit.SECONDS);
            int listed = l.getServiceInstances(GroupRunner.SERVICE_KEY).size();
            if (listed >= n) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException(
                        "only " + listed + " of " + n + " simulated runners registered after " + timeout);
            }
            Thread.onSpinWait();
        }
    }

    // ---- a running scenario ----

    /** A started scenario: its actor system, counters and (for the pipeline) the trainer's client. */
    public static final class Running implements AutoCloseable {
        private final ActorSystem<Void> system;
        private final Counter dispatched;
        private final Counter prepared;
        private final Counter taken;
        private final LocalRolloutClient client;
        private final ActorRef<WeightVersion.Command> weightVersion;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicReference<Throwable> trainerError = new AtomicReference<>();
        private final List<ActorSystem<Void>> others;
        private Thread trainer;

        Running(
                ActorSystem<Void> system,
                Counter dispatched,
                Counter prepared,
                Counter taken,
                LocalRolloutClient client,
                ActorRef<WeightVersion.Command> weightVersion) {
            this(system, dispatched, prepared, taken, client, weightVersion, List.of());
        }

        Running(
                ActorSystem<Void> system,
                Counter dispatched,
                Counter prepared,
                Counter taken,
                LocalRolloutClient client,
                ActorRef<WeightVersion.Command> weightVersion,
                List<ActorSystem<Void>> others) {
            this.others = List.copyOf(others);
            this.system = system;
            this.dispatched = dispatched;
            this.prepared = prepared;
            this.taken = taken;
            this.client = client;
            this.weightVersion = weightVersion;
        }

        private Counter ledgerWrites = new Counter();
        private Counter ledgerUnconfirmed = new Counter();
        private Counter ledgerSettled = new Counter();

        Running withLedger(Counter writes, Counter unconfirmed, Counter settled) {
            this.ledgerWrites = writes;
            this.ledgerUnconfirmed = unconfirmed;
            this.ledgerSettled = settled;
            return this;
        }

        private CoordinatorScenario scenario;

        Running withScenario(CoordinatorScenario scenario) {
            this.scenario = scenario;
            return this;
        }

        /** Open tasks in the ledger as the coordinator wrote it (coordinator scenarios). */
        public int ledgerOpen() {
            return scenario == null ? 0 : scenario.written.open.size();
        }

        /** Outcomes the stand-in collector received again after it had taken them (a fail-over re-sends some). */
        public long duplicateOutcomes() {
            return scenario == null ? 0 : scenario.duplicateOutcomes.get();
        }

        /** The current coordinator's status (coordinator scenarios). */
        public RolloutCoordinator.Status coordinatorStatus(Duration timeout) throws Exception {
            ActorRef<RolloutCoordinator.Command> c = scenario.current.get();
            return AskPattern.<RolloutCoordinator.Command, RolloutCoordinator.Status>ask(
                            c, RolloutCoordinator.GetStatus::new, timeout, system.scheduler())
                    .toCompletableFuture()
                    .get(timeout.toMillis() + 5000, TimeUnit.MILLISECONDS);
        }

        /**
         * Stops the coordinator while it admits (at its next message, as a crash would: what it
         * stashed or had not yet done is gone), waits until the ledger writes it made are settled,
         * and starts its successor, with a {@link ReplicatedState} of its own, on node {@code
         * successorNode} (0: the stopped one's node; another node reads the ledger through its own
         * replicator and reaches the runners and the collector over Artery). Returns once the
         * successor has recovered and dispatched again, with what it read back compared with the
         * ledger as written.
         */
        public Failover failOver(int successorNode, Duration timeout) throws Exception {
            CoordinatorScenario sc = scenario;
            if (sc == null || sc.setup.ledgerNodes() <= 0) {
                throw new IllegalStateException("a fail-over needs a coordinator scenario with a replicated ledger");
            }
            if (successorNode < 0 || successorNode >= sc.nodes.size()) {
                throw new IllegalArgumentException("no node " + successorNode + " of " + sc.nodes.size());
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            sc.kill.set(true);
            while (sc.stoppedAt.get() == 0) {
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("the coordinator did not stop within " + timeout);
                }
                Thread.sleep(1);
            }
            long stopped = sc.stoppedAt.get();
            // Its writes in flight still complete (its node is up): wait for them, so that the ledger
            // as written is what a majority holds.
            Counter writes = sc.counters[0];
            Counter unconfirmed = sc.counters[1];
            Counter settled = sc.counters[2];
            settled.awaitCount(
                    writes.get(), Duration.ofNanos(Math.max(1, deadline - System.nanoTime())), "writes to settle");
            long settledAt = System.nanoTime();
            Map<Long, DurableState.OpenTask> expected = sc.written.snapshot();
            long outcomesBefore = sc.outcomes.get();
            long dispatchedBefore = dispatched.get();
            ActorSystem<Void> node = sc.nodes.get(successorNode);
            org.apache.pekko.actor.typed.ActorRefResolver here =
                    org.apache.pekko.actor.typed.ActorRefResolver.get(system);
            ActorRef<Collector.Command> collector = org.apache.pekko.actor.typed.ActorRefResolver.get(node)
                    .resolveActorRef(here.toSerializationFormat(sc.collector));
            AtomicReference<DurableState.Ledger> read = new AtomicReference<>();
            DurableState state = counting(
                    new ReplicatedState(node, Duration.ofSeconds(10)), writes, unconfirmed, settled, sc.written, read);
            int total = sc.setup.total();
            int stash = CoordinatorRecovery.stashCapacity(total, 4 * total + sc.setup.batch());
            ActorRef<RolloutCoordinator.Command> successor = node.systemActorOf(
                    sc.create(collector, state), "coordinator-successor", org.apache.pekko.actor.typed.Props.empty());
            sc.current.set(successor);
            // A status read sent now waits in the successor's stash until it has recovered.
            RolloutCoordinator.Status status = AskPattern.<RolloutCoordinator.Command, RolloutCoordinator.Status>ask(
                            successor,
                            RolloutCoordinator.GetStatus::new,
                            Duration.ofNanos(Math.max(1, deadline - System.nanoTime())),
                            node.scheduler())
                    .toCompletableFuture()
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            long recoveredAt = System.nanoTime();
            long outcomesDuring = sc.outcomes.get() - outcomesBefore;
            long admittingAt = dispatched.awaitCount(
                    dispatchedBefore + 1,
                    Duration.ofNanos(Math.max(1, deadline - System.nanoTime())),
                    "the successor's first dispatch");
            DurableState.Ledger got = read.get();
            int missing = 0;
            int changed = 0;
            for (Map.Entry<Long, DurableState.OpenTask> e : expected.entrySet()) {
                DurableState.OpenTask back = got.open().get(e.getKey());
                if (back == null) {
                    missing++;
                } else if (!back.equals(e.getValue())) {
                    changed++;
                }
            }
            int extra = 0;
            for (Long id : got.open().keySet()) {
                if (!expected.containsKey(id)) {
                    extra++;
                }
            }
            return new Failover(
                    expected.size(),
                    got.open().size(),
                    missing,
                    extra,
                    changed,
                    unconfirmed.get(),
                    (settledAt - stopped) / 1e9,
                    (recoveredAt - stopped) / 1e9,
                    (Math.max(admittingAt, recoveredAt) - stopped) / 1e9,
                    outcomesDuring,
                    stash,
                    successorNode,
                    status);
        }

        /** Ledger writes whose stage completed, confirmed or not. */
        public Counter ledgerSettled() {
            return ledgerSettled;
        }

        /** Ledger writes the coordinator made. */
        public Counter ledgerWrites() {
            return ledgerWrites;
        }

        /** Ledger writes whose stage failed: not confirmed by a majority in time. */
        public Counter ledgerUnconfirmed() {
            return ledgerUnconfirmed;
        }

        /** Groups dispatched to simulated runners (coordinator admissions, re-dispatches included). */
        public Counter dispatched() {
            return dispatched;
        }

        /** Prepares answered by simulated runners. */
        public Counter prepared() {
            return prepared;
        }

        /** Groups the trainer thread took (and acknowledged). */
        public Counter taken() {
            return taken;
        }

        /**
         * How large payloads cross to this node's system from others: "data plane (TLS)", "data
         * plane (plain TCP)" or "stream refs".
         */
        public String largePayloadPath() {
            LargePayloads p = LargePayloads.get(system);
            return p.dataPlanePort() < 0
                    ? "stream refs"
                    : p.dataPlaneEncrypted() ? "data plane (TLS)" : "data plane (plain TCP)";
        }

        /** Starts a trainer thread that pulls and acknowledges batches until closed. */
        void startTrainer() {
            trainer = Thread.ofPlatform().name("bench-trainer").daemon().start(() -> {
                try {
                    while (!stop.get()) {
                        Optional<TrainingBatch> b = client.nextBatch(Duration.ofMillis(500));
                        if (b.isEmpty()) {
                            continue;
                        }
                        client.acknowledge(b.get());
                        for (int i = 0; i < b.get().size(); i++) {
                            taken.increment();
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (RuntimeException e) {
                    if (!stop.get()) {
                        trainerError.set(e);
                    }
                }
            });
        }

        /** The trainer thread's failure, if it failed. */
        public Optional<Throwable> trainerError() {
            return Optional.ofNullable(trainerError.get());
        }

        /** Publishes {@code version} and waits for the reply; throws when it failed. */
        public WeightVersion.PublishReply publish(int version, Path path, Duration timeout) throws Exception {
            WeightVersion.PublishReply reply = AskPattern.<WeightVersion.Command, WeightVersion.PublishReply>ask(
                            weightVersion,
                            r -> new WeightVersion.Publish(version, path.toString(), r),
                            timeout,
                            system.scheduler())
                    .toCompletableFuture()
                    .get(timeout.toMillis() + 5000, TimeUnit.MILLISECONDS);
            if (!reply.ok()) {
                throw new IllegalStateException("publish of version " + version + " failed: " + reply.error());
            }
            return reply;
        }

        @Override
        public void close() {
            stop.set(true);
            system.terminate();
            others.forEach(ActorSystem::terminate);
            try {
                system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
                for (ActorSystem<Void> o : others) {
                    o.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
                if (trainer != null) {
                    trainer.join(Duration.ofSeconds(10));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                System.err.println("the benchmark's actor system did not stop within 30 s: " + e);
            }
        }
    }

    private static StalenessBudget openBudget(int maxConcurrent, int batch) {
        // η large enough never to hold admission: the singletons, not the budget, set the pace.
        return new StalenessBudget(maxConcurrent, batch, 1_000_000_000L);
    }

    private static PromptSource prompts() {
        return index -> Optional.of(Map.of("index", index));
    }

    private static ActorSystem<Void> system(Behavior<Void> guardian, String name, Config pekko, CompletableFuture<?> up)
            throws Exception {
        ActorSystem<Void> system = ActorSystem.create(guardian, name, pekko);
        try {
            up.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            system.terminate();
            throw e;
        }
        return system;
    }

    /**
     * The real coordinator against {@code runners} simulated runners of {@code capacity} groups each
     * and a stand-in collector that answers each outcome at once and acknowledges a batch for every
     * {@code batch} accepted groups (so only the coordinator's own work is measured).
     */
    public static Running coordinator(int runners, int capacity, int batch, TensorDict rows, Config pekko)
            throws Exception {
        return coordinator(runners, capacity, batch, rows, pekko, 0);
    }

    /**
     * As {@link #coordinator(int, int, int, TensorDict, Config)}; with {@code ledgerNodes} &gt; 0 the
     * coordinator's actor system is one of {@code ledgerNodes} cluster nodes in this JVM (Artery TCP
     * on 127.0.0.1) and its ledger is the cluster's {@link ReplicatedState}, as {@code rollout node}
     * runs it: every ledger write waits for a majority of the nodes.
     */
    public static Running coordinator(
            int runners, int capacity, int batch, TensorDict rows, Config pekko, int ledgerNodes) throws Exception {
        return coordinator(runners, capacity, batch, rows, pekko, ledgerNodes, false);
    }

    /**
     * As {@link #coordinator(int, int, int, TensorDict, Config, int)}; {@code singleKeyLedger} keeps
     * the replicated ledger in one key and sends every write on its own, as it was before the ledger
     * was split by task range (a baseline to measure the split against; the key is a register of
     * today's compact part, not the map of one register per task it was then).
     */
    public static Running coordinator(
            int runners,
            int capacity,
            int batch,
            TensorDict rows,
            Config pekko,
            int ledgerNodes,
            boolean singleKeyLedger)
            throws Exception {
        return coordinator(
                new CoordinatorSetup(runners, capacity, Hold.NONE, batch, ledgerNodes, singleKeyLedger), rows, pekko);
    }

    /**
     * A coordinator scenario.
     *
     * @param runners simulated runners
     * @param spare groups a runner takes beyond those it holds ({@code --capacity})
     * @param hold how long a runner keeps a task running ({@link Hold#NONE}: it ends each at once)
     * @param batch accepted groups the stand-in collector acknowledges at a time
     * @param ledgerNodes 0: the in-memory ledger; else cluster nodes whose majority holds each write
     * @param singleKeyLedger the replicated ledger as one key, each write on its own (the layout before)
     */
    public record CoordinatorSetup(
            int runners, int spare, Hold hold, int batch, int ledgerNodes, boolean singleKeyLedger) {
        /** Groups in flight at most: what the budget and the stash are sized for. */
        int total() {
            return runners * (hold.held() + spare);
        }
    }

    /**
     * The ledger as the coordinators wrote it: every write applied in the order it was made (a
     * coordinator's writes of one task all go to one key, in order), so once every write is
     * confirmed it is what a majority holds and what a successor must read back.
     */
    static final class WrittenLedger {
        final java.util.concurrent.ConcurrentHashMap<Long, DurableState.OpenTask> open =
                new java.util.concurrent.ConcurrentHashMap<>();

        synchronized void apply(java.util.Collection<DurableState.OpenTask> put, java.util.Collection<Long> remove) {
            remove.forEach(open::remove);
            put.forEach(t -> open.put(t.taskId(), t));
        }

        synchronized Map<Long, DurableState.OpenTask> snapshot() {
            return new java.util.HashMap<>(open);
        }
    }

    /**
     * {@code state}, counting its ledger writes, those whose stage failed, and those settled either
     * way; every write is applied to {@code written} as it is made, and every ledger read is kept in
     * {@code read}.
     */
    private static DurableState counting(
            DurableState state,
            Counter writes,
            Counter unconfirmed,
            Counter settled,
            WrittenLedger written,
            AtomicReference<DurableState.Ledger> read) {
        return new DurableState() {
            @Override
            public java.util.concurrent.CompletionStage<VersionRecord> readVersion() {
                return state.readVersion();
            }

            @Override
            public java.util.concurrent.CompletionStage<Void> writeVersion(VersionRecord record) {
                return state.writeVersion(record);
            }

            @Override
            public java.util.concurrent.CompletionStage<Ledger> readLedger() {
                return state.readLedger().thenApply(l -> {
                    read.set(l);
                    return l;
                });
            }

            @Override
            public java.util.concurrent.CompletionStage<Void> writeLedger(
                    java.util.Collection<OpenTask> put, java.util.Collection<Long> remove, Cursor cursor) {
                writes.increment();
                written.apply(put, remove);
                return state.writeLedger(put, remove, cursor).whenComplete((ok, error) -> {
                    if (error != null) {
                        unconfirmed.increment();
                    }
                    settled.increment();
                });
            }
        };
    }

    /** Stops the coordinator it wraps at the first message after {@code kill} is set, as a crash would. */
    private static <T> Behavior<T> killable(Behavior<T> behavior, AtomicBoolean kill, AtomicLong stoppedAt) {
        @SuppressWarnings("unchecked")
        Class<T> any = (Class<T>) (Class<?>) Object.class;
        return Behaviors.intercept(
                () -> new org.apache.pekko.actor.typed.BehaviorInterceptor<T, T>(any) {
                    @Override
                    public Behavior<T> aroundReceive(
                            org.apache.pekko.actor.typed.TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
                        if (kill.get()) {
                            stoppedAt.compareAndSet(0, System.nanoTime());
                            return Behaviors.stopped();
                        }
                        return target.apply(ctx, msg);
                    }
                },
                behavior);
    }

    /**
     * The coordinator scenario of {@code setup}: the real coordinator, {@code setup.runners()}
     * simulated runners and the stand-in collector on the first node; with a replicated ledger,
     * {@code setup.ledgerNodes() - 1} more nodes that hold replicas. {@link Running#failOver} stops
     * the coordinator and starts its successor.
     */
    public static Running coordinator(CoordinatorSetup setup, TensorDict rows, Config pekko) throws Exception {
        Counter dispatched = new Counter();
        Counter prepared = new Counter();
        Counter ledgerWrites = new Counter();
        Counter ledgerUnconfirmed = new Counter();
        Counter ledgerSettled = new Counter();
        WrittenLedger written = new WrittenLedger();
        CoordinatorScenario scenario = new CoordinatorScenario(setup, written);
        CompletableFuture<Boolean> up = new CompletableFuture<>();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Collector.AckReply> acks = ctx.spawn(Behaviors.ignore(), "acks");
            ActorRef<Collector.Command> collector =
                    ctx.spawn(standInCollector(setup.batch(), acks, scenario), "collector");
            scenario.collector = collector;
            DurableState state = setup.ledgerNodes() > 0
                    ? (setup.singleKeyLedger()
                            ? new ReplicatedState(ctx.getSystem(), Duration.ofSeconds(10), 1, 1, false)
                            : new ReplicatedState(ctx.getSystem(), Duration.ofSeconds(10)))
                    : DurableState.inMemory();
            scenario.firstState = state;
            state = counting(state, ledgerWrites, ledgerUnconfirmed, ledgerSettled, written, new AtomicReference<>());
            scenario.current.set(ctx.spawn(
                    killable(scenario.create(collector, state), scenario.kill, scenario.stoppedAt), "coordinator"));
            spawnRunners(
                    ctx, setup.runners(), setup.spare(), setup.hold(), rows, rows.batchSize(), dispatched, prepared);
            up.complete(true);
            return Behaviors.empty();
        });
        if (setup.ledgerNodes() <= 0) {
            ActorSystem<Void> system = system(guardian, "bench-coordinator", pekko, up);
            scenario.nodes = List.of(system);
            return new Running(system, dispatched, prepared, new Counter(), null, null)
                    .withLedger(ledgerWrites, ledgerUnconfirmed, ledgerSettled)
                    .withScenario(scenario);
        }
        // The other nodes first: the coordinator's first ledger read needs a majority.
        Config cluster = CLUSTER.withFallback(pekko);
        List<ActorSystem<Void>> others = new ArrayList<>();
        try {
            for (int i = 1; i < setup.ledgerNodes(); i++) {
                ActorSystem<Void> node = ActorSystem.create(Behaviors.empty(), "bench-coordinator", cluster);
                others.add(node);
                WireWatch.watch(node);
                // Every node of a rollout cluster runs the replicator (ClusterRollout starts its
                // ReplicatedState on each); it starts on first use, so start it here.
                org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData.get(node)
                        .replicator();
            }
            ActorSystem<Void> system = ActorSystem.create(guardian, "bench-coordinator", cluster);
            WireWatch.watch(system);
            others.add(0, system);
            org.apache.pekko.cluster.typed.Cluster first = org.apache.pekko.cluster.typed.Cluster.get(system);
            for (ActorSystem<Void> node : others) {
                org.apache.pekko.cluster.typed.Cluster.get(node)
                        .manager()
                        .tell(org.apache.pekko.cluster.typed.Join.create(
                                first.selfMember().address()));
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (upCount(system) < setup.ledgerNodes()) {
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("only " + upCount(system) + " of " + setup.ledgerNodes()
                            + " ledger nodes were Up after 60 s");
                }
                Thread.onSpinWait();
            }
            up.get(30, TimeUnit.SECONDS);
            scenario.nodes = List.copyOf(others);
            scenario.counters = new Counter[] {ledgerWrites, ledgerUnconfirmed, ledgerSettled};
            return new Running(
                            system, dispatched, prepared, new Counter(), null, null, others.subList(1, others.size()))
                    .withLedger(ledgerWrites, ledgerUnconfirmed, ledgerSettled)
                    .withScenario(scenario);
        } catch (Exception e) {
            others.forEach(ActorSystem::terminate);
            throw e;
        }
    }

    /** What a coordinator scenario keeps to report on and to fail the coordinator over. */
    static final class CoordinatorScenario {
        final CoordinatorSetup setup;
        final WrittenLedger written;
        final AtomicBoolean kill = new AtomicBoolean();
        final AtomicLong stoppedAt = new AtomicLong();
        final AtomicReference<ActorRef<RolloutCoordinator.Command>> current = new AtomicReference<>();
        /** Outcomes the stand-in collector passed on as {@code TaskFinished}, and those it had taken already. */
        final AtomicLong outcomes = new AtomicLong();

        final AtomicLong duplicateOutcomes = new AtomicLong();
        volatile ActorRef<Collector.Command> collector;
        volatile DurableState firstState;
        volatile List<ActorSystem<Void>> nodes = List.of();
        volatile Counter[] counters;

        CoordinatorScenario(CoordinatorSetup setup, WrittenLedger written) {
            this.setup = setup;
            this.written = written;
        }

        Behavior<RolloutCoordinator.Command> create(ActorRef<Collector.Command> collector, DurableState state) {
            int total = setup.total();
            return RolloutCoordinator.create(
                    openBudget(total, setup.batch()),
                    prompts(),
                    List.of(),
                    0,
                    1,
                    4 * total + setup.batch(),
                    collector,
                    state,
                    Duration.ofSeconds(10),
                    RankShare.ALONE);
        }
    }

    /**
     * What a fail-over found.
     *
     * @param openAtStop open tasks in the ledger as written when the coordinator stopped (every write
     *     settled)
     * @param recovered open tasks the successor read back
     * @param missing tasks written open and not read back (lost)
     * @param extra tasks read back open that the writes had removed, or never wrote
     * @param changed tasks read back with other fields than written
     * @param unconfirmed ledger writes not confirmed by a majority in the whole run
     * @param settleSeconds from the stop until every write the coordinator made was settled
     * @param recoveredSeconds from the stop until the successor answered a status read (sent at its
     *     start; it waits in the stash until recovery is done)
     * @param admittingSeconds from the stop until a runner received the successor's first dispatch
     * @param outcomesDuringRecovery outcomes the collector sent on while the successor recovered
     * @param stashCapacity the successor's stash capacity
     * @param successorNode the node the successor ran on (0: the stopped one's)
     */
    public record Failover(
            int openAtStop,
            int recovered,
            int missing,
            int extra,
            int changed,
            long unconfirmed,
            double settleSeconds,
            double recoveredSeconds,
            double admittingSeconds,
            long outcomesDuringRecovery,
            int stashCapacity,
            int successorNode,
            RolloutCoordinator.Status statusAfter) {}

    /** Three or more nodes of one cluster in this JVM, as the multi-node tests run them. */
    private static final Config CLUSTER = com.typesafe.config.ConfigFactory.parseString("""
                    pekko.actor.provider = cluster
                    pekko.remote.artery.transport = tcp
                    pekko.remote.artery.canonical.hostname = "127.0.0.1"
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                    pekko.cluster.failure-detector.acceptable-heartbeat-pause = 30 s
                    pekko.remote.artery.advanced.instruments = ["org.rollout.cluster.SingletonHarness$FrameSizes"]
                    """);

    private static long upCount(ActorSystem<?> system) {
        return java.util.stream.StreamSupport.stream(
                        org.apache.pekko.cluster.typed.Cluster.get(system)
                                .state()
                                .getMembers()
                                .spliterator(),
                        false)
                .filter(m -> m.status() == org.apache.pekko.cluster.MemberStatus.up())
                .count();
    }

    /**
     * Stands in for the collector: every outcome is answered at once, every {@code batch} accepted are
     * acknowledged. An outcome it took already (delivered again after a fail-over) is answered and
     * counted, not acknowledged twice; a new coordinator ({@code Introduce}, {@code Attach}) is
     * answered from then on.
     */
    private static Behavior<Collector.Command> standInCollector(
            int batch, ActorRef<Collector.AckReply> acks, CoordinatorScenario scenario) {
        return Behaviors.setup(ctx -> {
            ActorRef<RolloutCoordinator.Command>[] coordinator = new ActorRef[1];
            List<Long> pending = new ArrayList<>(batch);
            TakenIds taken = new TakenIds();
            long[] nextBatch = {0};
            return Behaviors.receive(Collector.Command.class)
                    .onMessage(Collector.Introduce.class, i -> {
                        coordinator[0] = i.coordinator();
                        i.coordinator().tell(new RolloutCoordinator.CollectorIs(ctx.getSelf()));
                        return Behaviors.same();
                    })
                    .onMessage(Collector.Attach.class, a -> {
                        coordinator[0] = a.coordinator();
                        return Behaviors.same();
                    })
                    .onMessage(Collector.GroupFinished.class, g -> {
                        coordinator[0].tell(
                                new RolloutCoordinator.TaskFinished(g.taskId(), g.attempt(), false, true, null, 0));
                        scenario.outcomes.incrementAndGet();
                        if (!taken.add(g.taskId())) {
                            scenario.duplicateOutcomes.incrementAndGet();
                            return Behaviors.same();
                        }
                        pending.add(g.taskId());
                        if (pending.size() >= batch) {
                            coordinator[0].tell(
                                    new RolloutCoordinator.BatchConsumed(nextBatch[0]++, List.copyOf(pending), acks));
                            pending.clear();
                        }
                        return Behaviors.same();
                    })
                    .onAnyMessage(m -> Behaviors.same())
                    .build();
        });
    }

    // ---- what crosses the wire ----

    /**
     * What one ledger entry costs on the wire, measured with Pekko's own serializers (Distributed
     * Data's {@code ReplicatedDataSerializer} around the values, the values with whatever the
     * configuration binds {@link DurableState.LedgerEntry} to): an open task alone, and an open task
     * inside a ledger key's part (what every write to the key, a majority read and full-state gossip
     * carry per open task of the key).
     *
     * @param valueBytes an open task's serialized value, its manifest included
     * @param entryBytes one task of a key's part holding {@link #KEY_ENTRIES} open tasks, per task
     * @param keyBytes that key's register, whole
     */
    public record LedgerWireSize(double valueBytes, double entryBytes, int keyBytes) {

        /** Tasks of one measured key: the fleet's ~160,000 open tasks over 256 keys. */
        public static final int KEY_ENTRIES = 625;

        /** The binding that puts the entries back on Jackson CBOR, as they were written before. */
        public static Config cborBinding() {
            return com.typesafe.config.ConfigFactory.parseString(
                    "pekko.actor.serialization-bindings { \"org.rollout.cluster.DurableState$LedgerEntry\" = jackson-cbor }");
        }

        /** Measures in a throwaway actor system built from {@code pekko}. */
        public static LedgerWireSize measure(Config pekko) {
            org.apache.pekko.actor.ActorSystem system =
                    org.apache.pekko.actor.ActorSystem.create("ledger-wire-size", pekko);
            try {
                return measure(org.apache.pekko.serialization.SerializationExtension.get(system));
            } finally {
                system.terminate();
            }
        }

        static LedgerWireSize measure(org.apache.pekko.serialization.Serialization serialization) {
            // A node's address as the benchmark's nodes have it (the register carries it once).
            org.apache.pekko.cluster.ddata.SelfUniqueAddress self =
                    new org.apache.pekko.cluster.ddata.SelfUniqueAddress(new org.apache.pekko.cluster.UniqueAddress(
                            new org.apache.pekko.actor.Address("pekko", "bench-coordinator", "127.0.0.1", 40_123),
                            4_611_686_018_427L));
            long firstId = 1_000_000;
            DurableState.OpenTask sample = task(firstId, false);
            double value = serialization.serialize(sample).get().length
                    + org.apache.pekko.serialization.Serializers.manifestFor(
                                    serialization.findSerializerFor(sample), sample)
                            .length();
            // A key holding KEY_ENTRIES tasks of its ranges (64 ids a range, every 256th range).
            List<DurableState.OpenTask> tasks = new ArrayList<>();
            for (int i = 0; i < KEY_ENTRIES; i++) {
                long id = firstId + (i / 64) * 64L * 256 + i % 64;
                tasks.add(task(id, i % 2 == 0));
            }
            DurableState.Cursor cursor = new DurableState.Cursor(firstId + 170_000, firstId + 169_000, 160_000, 3);
            int whole = size(serialization, register(self, new DurableState.LedgerPart(cursor, tasks)));
            int one = size(serialization, register(self, new DurableState.LedgerPart(cursor, tasks.subList(0, 1))));
            return new LedgerWireSize(value, (whole - one) / (double) (KEY_ENTRIES - 1), whole);
        }

        private static org.apache.pekko.cluster.ddata.LWWRegister<DurableState.LedgerEntry> register(
                org.apache.pekko.cluster.ddata.SelfUniqueAddress self, DurableState.LedgerPart part) {
            return org.apache.pekko.cluster.ddata.LWWRegister.create(
                    self, (DurableState.LedgerEntry) part, (current, v) -> (3L << 40) + 12_345);
        }

        private static DurableState.OpenTask task(long id, boolean accepted) {
            return new DurableState.OpenTask(id, 0, false, id - 37, 12, accepted, false);
        }

        private static int size(org.apache.pekko.serialization.Serialization serialization, Object o) {
            return serialization.serialize(o).get().length;
        }
    }

    /**
     * What Artery did with the messages of every node in this JVM: the messages it dropped (per
     * message class, oversized ones apart: Artery's encoder publishes a {@code Dropped} event for
     * each, besides logging {@code OversizedPayloadException}), and the sizes of those it sent (a
     * remote instrument, {@link FrameSizes}, in {@link #CLUSTER}'s configuration). A message sent by
     * actor selection, as Distributed Data sends its gossip and delta propagation, is counted by the
     * class of the message it carries.
     */
    public static final class WireWatch {
        private static final java.util.concurrent.ConcurrentHashMap<String, AtomicLong> OVERSIZED =
                new java.util.concurrent.ConcurrentHashMap<>();
        private static final java.util.concurrent.ConcurrentHashMap<String, AtomicLong> DROPPED =
                new java.util.concurrent.ConcurrentHashMap<>();
        private static final java.util.concurrent.ConcurrentHashMap<String, long[]> SENT =
                new java.util.concurrent.ConcurrentHashMap<>();
        /** A sent message at least this big is counted as near the frame. */
        public static final int NEAR_FRAME = 200 * 1024;

        private WireWatch() {}

        /** Counts the drops of {@code system} from now on. */
        public static void watch(ActorSystem<?> system) {
            ActorRef<org.apache.pekko.actor.Dropped> counter = system.systemActorOf(
                    Behaviors.receive(org.apache.pekko.actor.Dropped.class)
                            .onMessage(org.apache.pekko.actor.Dropped.class, d -> {
                                String name = className(d.message());
                                (d.reason().startsWith("Discarding oversized payload") ? OVERSIZED : DROPPED)
                                        .computeIfAbsent(name, k -> new AtomicLong())
                                        .incrementAndGet();
                                return Behaviors.same();
                            })
                            .build(),
                    "wire-watch",
                    org.apache.pekko.actor.typed.Props.empty());
            system.eventStream()
                    .tell(new org.apache.pekko.actor.typed.eventstream.EventStream.Subscribe<>(
                            org.apache.pekko.actor.Dropped.class, counter));
        }

        static String className(Object message) {
            if (message instanceof org.apache.pekko.actor.ActorSelectionMessage sel) {
                message = sel.msg();
            }
            return message == null ? "null" : message.getClass().getSimpleName();
        }

        static void sent(Object message, int size) {
            long[] s = SENT.computeIfAbsent(className(message), k -> new long[4]);
            synchronized (s) {
                s[0]++;
                s[1] += size;
                s[2] = Math.max(s[2], size);
                if (size >= NEAR_FRAME) {
                    s[3]++;
                }
            }
        }

        /** Forgets every count. */
        public static void reset() {
            OVERSIZED.clear();
            DROPPED.clear();
            SENT.clear();
        }

        /** Messages Artery dropped as larger than its frame, by message class. */
        public static Map<String, Long> oversized() {
            return counts(OVERSIZED);
        }

        /** Messages Artery dropped for any other reason (a full send queue), by message class. */
        public static Map<String, Long> dropped() {
            return counts(DROPPED);
        }

        /** For messages of {@code simpleClassName} sent: count, bytes, the largest, those of at least {@link #NEAR_FRAME}. */
        public static long[] sent(String simpleClassName) {
            long[] s = SENT.get(simpleClassName);
            if (s == null) {
                return new long[4];
            }
            synchronized (s) {
                return s.clone();
            }
        }

        private static Map<String, Long> counts(java.util.concurrent.ConcurrentHashMap<String, AtomicLong> m) {
            Map<String, Long> out = new java.util.TreeMap<>();
            m.forEach((k, v) -> out.put(k, v.get()));
            return out;
        }
    }

    /** The remote instrument of {@link WireWatch}: notes the size of every message Artery sends. */
    public static final class FrameSizes extends org.apache.pekko.remote.artery.RemoteInstrument {
        @Override
        public byte identifier() {
            return 17;
        }

        @Override
        public void remoteWriteMetadata(
                org.apache.pekko.actor.ActorRef recipient,
                Object message,
                org.apache.pekko.actor.ActorRef sender,
                java.nio.ByteBuffer buffer) {}

        @Override
        public void remoteMessageSent(
                org.apache.pekko.actor.ActorRef recipient,
                Object message,
                org.apache.pekko.actor.ActorRef sender,
                int size,
                long time) {
            WireWatch.sent(message, size);
        }

        @Override
        public void remoteReadMetadata(
                org.apache.pekko.actor.ActorRef recipient,
                Object message,
                org.apache.pekko.actor.ActorRef sender,
                java.nio.ByteBuffer buffer) {}

        @Override
        public void remoteMessageReceived(
                org.apache.pekko.actor.ActorRef recipient,
                Object message,
                org.apache.pekko.actor.ActorRef sender,
                int size,
                long time) {}
    }

    /**
     * The real collector, fed by a stand-in for the coordinator and runners that keeps {@code
     * window} groups outstanding (a new one for every {@code TaskFinished}), drained by a trainer
     * thread that pulls and acknowledges batches of {@code batch}.
     */
    public static Running collector(int batch, int window, TensorDict rows, Config pekko) throws Exception {
        return collector(batch, window, rows, pekko, 0, 1);
    }

    /**
     * As {@link #collector(int, int, TensorDict, Config)}, for trainer rank {@code rank} of {@code
     * ranks}: the collector is that rank's ({@code batch} is the rank's share of a step), fed the
     * rank's task ids {@code rank, rank + ranks, …}.
     */
    public static Running collector(int batch, int window, TensorDict rows, Config pekko, int rank, int ranks)
            throws Exception {
        RankShare share = new RankShare(rank, ranks);
        Counter fed = new Counter();
        CompletableFuture<ActorRef<Collector.Command>> up = new CompletableFuture<>();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            ActorRef<RolloutCoordinator.Command> feeder =
                    ctx.spawn(feeder(window, rows, fed, share, ActorRef::tell), "feeder");
            ActorRef<Collector.Command> collector = ctx.spawn(
                    TestCollectors.behavior(batch, Duration.ofMinutes(10), topic, feeder, false, share), "collector");
            up.complete(collector);
            return Behaviors.empty();
        });
        ActorSystem<Void> system = system(guardian, "bench-collector", pekko, up);
        LocalRolloutClient client =
                new LocalRolloutClient(system, new LocalRollout.Refs(null, up.get(), null), Duration.ofMinutes(1));
        Running r = new Running(system, fed, new Counter(), new Counter(), client, null);
        r.startTrainer();
        return r;
    }

    /**
     * As {@link #collector(int, int, TensorDict, Config)}, but the feeder runs on a second cluster
     * node in this JVM (Artery TCP on 127.0.0.1): every group reaches the collector as a runner on
     * another node sends it ({@code CollectorTransfers.deliver}: Kryo in one frame, or streamed in chunks
     * above {@code rollout.large_payload_threshold}) and is decoded on the collector's node. The
     * trainer thread pulls on the collector's node.
     */
    public static Running remoteCollector(int batch, int window, TensorDict rows, Config pekko) throws Exception {
        return remoteCollector(batch, window, rows, pekko, com.typesafe.config.ConfigFactory.empty());
    }

    /**
     * As {@link #remoteCollector(int, int, TensorDict, Config)}, with {@code transport} over the
     * nodes' Artery settings on both nodes: e.g. {@link TlsStores#tlsTcp()} for Artery, and so the
     * data plane, over TLS.
     */
    public static Running remoteCollector(int batch, int window, TensorDict rows, Config pekko, Config transport)
            throws Exception {
        return remoteCollector(batch, window, rows, pekko, transport, 0, 1);
    }

    /**
     * As {@link #remoteCollector(int, int, TensorDict, Config, Config)}, for trainer rank {@code
     * rank} of {@code ranks}: the collector is that rank's ({@code batch} is the rank's share of a
     * step; its batch ids carry the rank), fed the rank's task ids {@code rank, rank + ranks, …}.
     */
    public static Running remoteCollector(
            int batch, int window, TensorDict rows, Config pekko, Config transport, int rank, int ranks)
            throws Exception {
        RankShare share = new RankShare(rank, ranks);
        Counter fed = new Counter();
        Config cluster = transport.withFallback(CLUSTER).withFallback(pekko);
        ActorSystem<Void> feederNode = ActorSystem.create(Behaviors.empty(), "bench-collector", cluster);
        ActorSystem<Void> system = null;
        try {
            CompletableFuture<ActorRef<RolloutCoordinator.Command>> feederUp = new CompletableFuture<>();
            LargePayloads feederPayloads = LargePayloads.get(feederNode);
            feederNode.systemActorOf(
                    Behaviors.<Void>setup(ctx -> {
                        feederUp.complete(ctx.spawn(
                                feeder(
                                        window,
                                        rows,
                                        fed,
                                        share,
                                        (to, g) -> CollectorTransfers.deliver(to, g, feederPayloads)),
                                "feeder"));
                        return Behaviors.empty();
                    }),
                    "bench",
                    org.apache.pekko.actor.typed.Props.empty());
            String feederPath = org.apache.pekko.actor.typed.ActorRefResolver.get(feederNode)
                    .toSerializationFormat(feederUp.get(30, TimeUnit.SECONDS));
            CompletableFuture<ActorRef<Collector.Command>> up = new CompletableFuture<>();
            Behavior<Void> guardian = Behaviors.setup(ctx -> {
                ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                        Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
                ActorRef<RolloutCoordinator.Command> feeder = org.apache.pekko.actor.typed.ActorRefResolver.get(
                                ctx.getSystem())
                        .resolveActorRef(feederPath);
                up.complete(ctx.spawn(
                        TestCollectors.behavior(batch, Duration.ofMinutes(10), topic, feeder, false, share),
                        "collector"));
                return Behaviors.empty();
            });
            system = ActorSystem.create(guardian, "bench-collector", cluster);
            org.apache.pekko.cluster.typed.Cluster first = org.apache.pekko.cluster.typed.Cluster.get(system);
            first.manager()
                    .tell(org.apache.pekko.cluster.typed.Join.create(
                            first.selfMember().address()));
            org.apache.pekko.cluster.typed.Cluster.get(feederNode)
                    .manager()
                    .tell(org.apache.pekko.cluster.typed.Join.create(
                            first.selfMember().address()));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (upCount(system) < 2) {
                if (System.nanoTime() > deadline) {
                    throw new TimeoutException("the feeder's node did not join the collector's within 60 s");
                }
                Thread.onSpinWait();
            }
            LocalRolloutClient client = new LocalRolloutClient(
                    system, new LocalRollout.Refs(null, up.get(30, TimeUnit.SECONDS), null), Duration.ofMinutes(1));
            Running r = new Running(system, fed, new Counter(), new Counter(), client, null, List.of(feederNode));
            r.startTrainer();
            return r;
        } catch (Exception e) {
            feederNode.terminate();
            if (system != null) {
                system.terminate();
            }
            throw e;
        }
    }

    /**
     * Stands in for the coordinator (it is the collector's coordinator) and for the runners: keeps
     * groups running (sent, not yet finished) plus groups the collector holds unbatched below
     * {@code window}, as the coordinator's admission does with {@code queue_size}, and records each
     * acceptance, hand-out and {@code BatchConsumed} at once, as an in-memory ledger does.
     */
    private static Behavior<RolloutCoordinator.Command> feeder(
            int window,
            TensorDict rows,
            Counter fed,
            RankShare share,
            java.util.function.BiConsumer<ActorRef<Collector.Command>, Collector.GroupFinished> send) {
        long tokens = rows.batchSize();
        return Behaviors.setup(ctx -> {
            long[] next = {share.rank()};
            int[] running = {0};
            int[] buffered = {0};
            ActorRef<Collector.Command>[] collector = new ActorRef[1];
            Runnable feed = () -> {
                while (running[0] + buffered[0] < window) {
                    running[0]++;
                    fed.increment();
                    send.accept(collector[0], accepted(next[0], 0, 0, rows, tokens));
                    next[0] += share.ranks();
                }
            };
            return Behaviors.receive(RolloutCoordinator.Command.class)
                    .onMessage(RolloutCoordinator.CollectorIs.class, is -> {
                        collector[0] = is.collector();
                        collector[0].tell(new Collector.Attach(ctx.getSelf(), 0, 0, List.of(), List.of()));
                        feed.run();
                        return Behaviors.same();
                    })
                    .onMessage(RolloutCoordinator.TaskFinished.class, f -> {
                        running[0]--;
                        buffered[0] = f.buffered();
                        // The ledger is written at once: the group may be handed out.
                        collector[0].tell(new Collector.AcceptRecorded(f.taskId()));
                        feed.run();
                        return Behaviors.same();
                    })
                    .onMessage(RolloutCoordinator.HandingOut.class, h -> {
                        h.collector().tell(new Collector.HandOutRecorded(h.batchId()));
                        return Behaviors.same();
                    })
                    .onMessage(RolloutCoordinator.Backlog.class, b -> {
                        buffered[0] = b.buffered();
                        feed.run();
                        return Behaviors.same();
                    })
                    .onMessage(RolloutCoordinator.BatchConsumed.class, c -> {
                        c.replyTo().tell(new Collector.AckReply(c.batchId(), true));
                        return Behaviors.same();
                    })
                    .onAnyMessage(m -> Behaviors.same())
                    .build();
        });
    }

    /**
     * The real coordinator and collector against {@code runners} simulated runners, drained by a
     * trainer thread: the engine's control plane end to end, generation costing nothing.
     */
    public static Running pipeline(int runners, int capacity, int batch, TensorDict rows, Config pekko)
            throws Exception {
        Counter dispatched = new Counter();
        Counter prepared = new Counter();
        CompletableFuture<LocalRollout.Refs> up = new CompletableFuture<>();
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            ActorRef<Collector.Command> collector = ctx.spawn(
                    TestCollectors.behavior(batch, Duration.ofMinutes(10), topic, null, true, RankShare.ALONE),
                    "collector");
            int total = runners * capacity;
            ActorRef<RolloutCoordinator.Command> coordinator = ctx.spawn(
                    RolloutCoordinator.create(
                            openBudget(total, batch),
                            prompts(),
                            List.of(),
                            0,
                            1,
                            4 * total + batch,
                            collector,
                            DurableState.inMemory(),
                            Duration.ofSeconds(10),
                            RankShare.ALONE),
                    "coordinator");
            spawnRunners(ctx, runners, capacity, rows, rows.batchSize(), dispatched, prepared);
            up.complete(new LocalRollout.Refs(coordinator, collector, null));
            return Behaviors.empty();
        });
        ActorSystem<Void> system = system(guardian, "bench-pipeline", pekko, up);
        LocalRolloutClient client = new LocalRolloutClient(system, up.get(), Duration.ofMinutes(1));
        Running r = new Running(system, dispatched, prepared, new Counter(), client, null);
        r.startTrainer();
        return r;
    }

    /**
     * The real weight version with {@code runners} simulated runners and {@code servers} simulated
     * servers reached through the real {@link WeightUpdater} ({@link InProcessServers}); the
     * coordinator is a stand-in that ignores pause and resume. Returns once every runner is listed.
     */
    public static Running weights(int runners, InProcessServers servers, ExecutorService blocking, Config pekko)
            throws Exception {
        Counter prepared = new Counter();
        CompletableFuture<ActorRef<WeightVersion.Command>> up = new CompletableFuture<>();
        TensorDict rows = groupRows(1, 8);
        Behavior<Void> guardian = Behaviors.setup(ctx -> {
            ActorRef<Topic.Command<WeightVersion.VersionChanged>> topic = ctx.spawn(
                    Topic.create(WeightVersion.VersionChanged.class, "rollout-weight-version"), "version-topic");
            // Stands in for the coordinator: confirms each resumed admission at once, as the real
            // one does, so the weight version answers the publisher without waiting it out.
            ActorRef<RolloutCoordinator.Command> coordinator = ctx.spawn(
                    Behaviors.receiveMessage(m -> {
                        if (m instanceof RolloutCoordinator.ResumeAdmission r && r.replyTo() != null) {
                            r.replyTo().tell(r.version());
                        }
                        return Behaviors.same();
                    }),
                    "coordinator");
            ActorRef<WeightVersion.Command> wv = ctx.spawn(
                    WeightVersion.create(
                            0,
                            servers.publisher(),
                            coordinator,
                            topic,
                            blocking,
                            Duration.ofSeconds(60),
                            DurableState.inMemory()),
                    "weight-version");
            spawnRunners(ctx, runners, 1, rows, 1, new Counter(), prepared);
            up.complete(wv);
            return Behaviors.empty();
        });
        ActorSystem<Void> system = system(guardian, "bench-weights", pekko, up);
        try {
            awaitRunners(system, runners, Duration.ofSeconds(60));
        } catch (Exception e) {
            system.terminate();
            throw e;
        }
        return new Running(system, new Counter(), prepared, new Counter(), null, up.get());
    }

    // ---- simulated servers ----

    /**
     * {@code n} simulated inference servers behind an in-process {@link HttpClient}: every control
     * call (SGLang's {@code update_weights_from_disk}, {@code continue_generation}) succeeds after
     * {@code callDelay} (zero: at once), and is counted per server. The publisher is the engine's
     * own: {@link WeightUpdater#update} (one virtual thread per server, timeouts, retries, the
     * report) and {@link RemoteEngines#toReport}.
     */
    public static final class InProcessServers {
        private final List<ServerAddress> addresses;
        private final AtomicIntegerArray calls;
        private final WeightUpdater updater;

        public InProcessServers(int n, Duration callDelay) {
            if (n < 1 || n > 65_000) {
                throw new IllegalArgumentException("servers must be in 1..65000, not " + n);
            }
            List<ServerAddress> a = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                a.add(new ServerAddress("127.0.0.1", i + 1));
            }
            this.addresses = List.copyOf(a);
            this.calls = new AtomicIntegerArray(n + 1);
            this.updater = new WeightUpdater(
                    InferenceConfig.builder()
                            .addresses(addresses.get(0).toString())
                            .build(),
                    new AnsweringClient(calls, callDelay));
        }

        WeightPublisher publisher() {
            return (weights, version) -> {
                WeightUpdateReport report = updater.update(addresses, weights, version);
                return RemoteEngines.toReport(report);
            };
        }

        /** Calls server {@code i} (0-based) received so far. */
        public int calls(int i) {
            return calls.get(i + 1);
        }

        public int size() {
            return addresses.size();
        }

        /** The report's server count that loaded, for a check on {@code reply}. */
        public static int updated(WeightVersion.PublishReply reply) {
            PublishResult r = reply.report();
            return r == null ? 0 : r.serversUpdated();
        }
    }

    /** An {@link HttpClient} that answers every request in process with {@code {"success":true}}. */
    private static final class AnsweringClient extends HttpClient {
        private static final byte[] OK = "{\"success\":true}".getBytes(StandardCharsets.UTF_8);
        private final AtomicIntegerArray calls;
        private final Duration delay;

        AnsweringClient(AtomicIntegerArray calls, Duration delay) {
            this.calls = calls;
            this.delay = delay;
        }

        @Override
        public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
            throw new UnsupportedOperationException("the weight updater sends asynchronously");
        }

        @Override
        public <T> CompletableFuture<HttpResponse<T>> sendAsync(
                HttpRequest request, HttpResponse.BodyHandler<T> handler) {
            calls.incrementAndGet(request.uri().getPort());
            @SuppressWarnings("unchecked")
            HttpResponse<T> response = (HttpResponse<T>) new Answer(request);
            if (delay.isZero()) {
                return CompletableFuture.completedFuture(response);
            }
            return CompletableFuture.supplyAsync(
                    () -> response, CompletableFuture.delayedExecutor(delay.toNanos(), TimeUnit.NANOSECONDS));
        }

        @Override
        public <T> CompletableFuture<HttpResponse<T>> sendAsync(
                HttpRequest request, HttpResponse.BodyHandler<T> handler, HttpResponse.PushPromiseHandler<T> push) {
            return sendAsync(request, handler);
        }

        @Override
        public Optional<CookieHandler> cookieHandler() {
            return Optional.empty();
        }

        @Override
        public Optional<Duration> connectTimeout() {
            return Optional.empty();
        }

        @Override
        public Redirect followRedirects() {
            return Redirect.NEVER;
        }

        @Override
        public Optional<ProxySelector> proxy() {
            return Optional.empty();
        }

        @Override
        public SSLContext sslContext() {
            return null;
        }

        @Override
        public SSLParameters sslParameters() {
            return null;
        }

        @Override
        public Optional<Authenticator> authenticator() {
            return Optional.empty();
        }

        @Override
        public Version version() {
            return Version.HTTP_1_1;
        }

        @Override
        public Optional<Executor> executor() {
            return Optional.empty();
        }

        private record Answer(HttpRequest request) implements HttpResponse<byte[]> {
            @Override
            public int statusCode() {
                return 200;
            }

            @Override
            public Optional<HttpResponse<byte[]>> previousResponse() {
                return Optional.empty();
            }

            @Override
            public HttpHeaders headers() {
                return HttpHeaders.of(Map.of("content-type", List.of("application/json")), (a, b) -> true);
            }

            @Override
            public byte[] body() {
                return OK;
            }

            @Override
            public Optional<SSLSession> sslSession() {
                return Optional.empty();
            }

            @Override
            public java.net.URI uri() {
                return request.uri();
            }

            @Override
            public Version version() {
                return Version.HTTP_1_1;
            }
        }
    }
}
