package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.Int32Tensor;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContext;
import org.rollout.python.PythonWorkflow;
import org.rollout.python.PythonWorkflowPool;
import org.rollout.testengine.ScriptedEngine;

/**
 * Python workflows against the same workflow in Java, on the instant engine: episodes per second of
 * an RLVR-style episode (generate, reward, a row of six tensors) run as a Java {@link
 * RolloutWorkflow} and as an AReaL-style Python workflow in the worker pool, in groups of {@code
 * --group} with {@code --groups-in-flight} groups at once. Two more Python workflows split the
 * Python path's cost per episode: one that returns None at once (the channel and the event loop),
 * and one that generates and returns None (adds the generation's round trip). Rounds interleave the
 * four; reported are the medians.
 */
public final class PythonWorkflowBenchmark implements EndToEndBenchmark {
    /** AReaL's own WorkflowExecutor running a Python workflow in-process, groups of 8 on two cores. */
    static final double AREAL_EPISODES_PER_SECOND = 14_000;

    @Override
    public String name() {
        return "python-workflow";
    }

    @Override
    public String description() {
        return "episodes/s of an RLVR-style workflow in Python (worker pool) vs the same in Java, instant engine;"
                + " the Python path's cost per episode split";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("episodes", "8000", "episodes per measured run"),
                new Flag("group", "8", "episodes per group (the slots run concurrently)"),
                new Flag("groups-in-flight", "64", "groups running at once"),
                new Flag("workers", "2", "Python worker processes"),
                new Flag("tokens", "16", "tokens the instant engine answers"),
                new Flag("rounds", "3", "measured rounds (each runs the four workflows once)"),
                new Flag("python", "/usr/bin/python3", "the interpreter"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int episodes = f.integer("episodes", 1);
        int group = f.integer("group", 1);
        int inFlight = f.integer("groups-in-flight", 1);
        int workers = f.integer("workers", 1);
        int tokens = f.integer("tokens", 1);
        int rounds = f.integer("rounds", 1);
        String python = f.string("python");
        Path root = Path.of(
                        System.getProperty("rollout.repo.root", System.getenv().getOrDefault("ROLLOUT_HOME", "")))
                .toAbsolutePath();
        GenerationConfig g = GenerationConfig.builder().maxNewTokens(tokens).build();
        ScriptedEngine engine = ScriptedEngine.generating(tokens);
        PythonWorkflowPool.Settings settings = new PythonWorkflowPool.Settings(
                python,
                root.resolve("benchmarks/src/main/python").toString(),
                root.resolve("clients/python"),
                workers,
                Duration.ofSeconds(120));
        List<PythonWorkflow> pools = new ArrayList<>();
        try {
            for (String cls : List.of("RlvrStyle", "Null", "GenerateOnly")) {
                pools.add(new PythonWorkflow(
                        PythonWorkflowPool.start("bench_workflows:" + cls, Map.of(), g, null, settings), g));
            }
            RolloutWorkflow java = javaRlvr(g);
            List<RolloutWorkflow> all = List.of(java, pools.get(0), pools.get(1), pools.get(2));
            String[] names = {"java", "python", "python_null", "python_generate"};
            // One unmeasured run of each: JIT, the workers' first imports, all workers started.
            for (RolloutWorkflow w : all) {
                episodesPerSecond(w, engine, Math.min(episodes, 2000), group, inFlight);
            }
            double[][] eps = new double[all.size()][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int i = 0; i < all.size(); i++) {
                    eps[i][r] = episodesPerSecond(all.get(i), engine, episodes, group, inFlight);
                    log.printf("round %d %s: %.0f episodes/s%n", r + 1, names[i], eps[i][r]);
                }
            }
            double javaEps = median(eps[0]);
            double pyEps = median(eps[1]);
            double nullEps = median(eps[2]);
            double genEps = median(eps[3]);
            double us = 1e6 / pyEps;
            double usNull = 1e6 / nullEps;
            double usGen = 1e6 / genEps;
            return new SummaryLine(name())
                    .put("episodes", episodes)
                    .put("group", group)
                    .put("groups_in_flight", inFlight)
                    .put("workers", workers)
                    .put("java_episodes_per_s", javaEps)
                    .put("python_episodes_per_s", pyEps)
                    .put("ratio_python_to_java", pyEps / javaEps)
                    .put("python_us_per_episode", us)
                    .put("us_channel_and_event_loop", usNull)
                    .put("us_generate_round_trip", usGen - usNull)
                    .put("us_tensors_and_reward", us - usGen)
                    .put("ratio_python_to_areal_14000", pyEps / AREAL_EPISODES_PER_SECOND)
                    .put("met", pyEps >= AREAL_EPISODES_PER_SECOND ? "yes" : "no");
        } finally {
            pools.forEach(PythonWorkflow::close);
        }
    }

    /** The Java twin of bench_workflows.RlvrStyle. */
    static RolloutWorkflow javaRlvr(GenerationConfig g) {
        return (engine, data) -> {
            int[] ids = ((String) data.get("prompt")).chars().toArray();
            ModelResponse r = engine.generate(ModelRequest.of(ids, g.withNSamples(1)));
            float reward = r.outputLength() > 0 && r.outputToken(0) == 'a' ? 1f : 0f;
            WorkflowContext.current().stats().scalar("reward", reward);
            int p = r.inputLength();
            int o = r.outputLength();
            int n = p + o;
            int[] seq = Arrays.copyOf(r.inputTokens(), n);
            System.arraycopy(r.outputTokens(), 0, seq, p, o);
            int[] loss = new int[n];
            float[] logprobs = new float[n];
            int[] versions = new int[n];
            boolean[] mask = new boolean[n];
            Arrays.fill(versions, 0, p, -1);
            Arrays.fill(mask, true);
            for (int i = 0; i < o; i++) {
                loss[p + i] = 1;
                logprobs[p + i] = r.outputLogprob(i);
                versions[p + i] = r.outputVersion(i);
            }
            return EpisodeResult.trajectory(TensorDict.builder()
                    .put("input_ids", Int32Tensor.of(seq, 1, n))
                    .put("loss_mask", Int32Tensor.of(loss, 1, n))
                    .put("logprobs", Float32Tensor.of(logprobs, 1, n))
                    .put("versions", Int32Tensor.of(versions, 1, n))
                    .put("attention_mask", BoolTensor.of(mask, 1, n))
                    .put("rewards", Float32Tensor.of(new float[] {reward}, 1))
                    .build());
        };
    }

    /** Runs {@code episodes} episodes as groups, {@code inFlight} groups at once; episodes per second. */
    static double episodesPerSecond(RolloutWorkflow w, InferenceEngine engine, int episodes, int group, int inFlight)
            throws Exception {
        int groups = Math.max(1, episodes / group);
        AtomicInteger next = new AtomicInteger();
        long start = System.nanoTime();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> lanes = new ArrayList<>();
            for (int lane = 0; lane < inFlight; lane++) {
                lanes.add(threads.submit(() -> {
                    int task;
                    while ((task = next.getAndIncrement()) < groups) {
                        runGroup(w, engine, task, group, threads);
                    }
                    return null;
                }));
            }
            for (Future<?> l : lanes) {
                l.get();
            }
        }
        return groups * (double) group / ((System.nanoTime() - start) / 1e9);
    }

    private static void runGroup(
            RolloutWorkflow w, InferenceEngine engine, int task, int group, ExecutorService threads) throws Exception {
        Map<String, Object> data = Map.of("prompt", "What is " + (task % 10) + " + 1? Answer:");
        List<Future<EpisodeResult>> slots = new ArrayList<>(group);
        for (int s = 0; s < group; s++) {
            WorkflowContext ctx = WorkflowContext.builder()
                    .taskId(task)
                    .sampleIdx(s)
                    .groupSize(group)
                    .build();
            slots.add(threads.submit(() -> WorkflowContext.callWith(ctx, () -> w.runEpisode(engine, data))));
        }
        for (Future<EpisodeResult> slot : slots) {
            slot.get();
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
