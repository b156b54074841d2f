package org.rollout.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;

/**
 * The engine's configuration, read and validated by {@link RolloutConfig}: typed values grouped as
 * the HOCON tree is ({@code rollout}, {@code gconfig}, {@code eval_gconfig}, {@code actor}), with
 * every derived value resolved.
 *
 * <pre>
 *   reference.conf ◄── file ◄── key=value overrides      (later wins)
 *          └──────────── RolloutConfig.load ────────────► RolloutSettings
 *                                                          ├ rollout()        Rollout (+ dataset)
 *                                                          ├ gconfig()        GenerationConfig
 *                                                          ├ evalGconfig()    GenerationConfig
 *                                                          ├ actor()          Actor
 *                                                          ├ inferenceConfig(servers)
 *                                                          └ servers(), runDirectory(), config()
 * </pre>
 *
 * <p>Derived values: {@code max_concurrent_rollouts} null → {@code consumer_batch_size};
 * {@code queue_size} null → {@code max_concurrent_rollouts × 16}; {@code node_capacity} and
 * {@code eval_max_concurrent} null → {@code max_concurrent_rollouts}; {@code min_usable_group_size}
 * null → derived by {@link MinUsableGroupSize#resolve} (semantics §5.4).
 *
 * <p>Immutable and thread-safe. Only {@link RolloutConfig} builds one, so an instance is always
 * valid; the nested records are plain values (building them directly checks nothing beyond
 * nulls). The group options and the staleness budget are built from these values by the modules
 * that own them ({@code GroupOptions.from}, {@code GroupOptions.forEval}, {@code StalenessBudget}).
 */
public final class RolloutSettings {
    /** The values of {@code rollout.tokenizer_path} that select the built-in byte-level tokenizer. */
    public static final Set<String> BUILTIN_TOKENIZER_NAMES = Set.of("", "builtin", "byte-level");

    /** A level of the trainer's normalisation ({@code actor.reward_norm}, {@code actor.adv_norm}). */
    public enum NormLevel {
        BATCH("batch"),
        GROUP("group");

        private final String configName;

        NormLevel(String configName) {
            this.configName = configName;
        }

        /** The spelling in configuration: {@code batch} or {@code group}. */
        public String configName() {
            return configName;
        }

        @Override
        public String toString() {
            return configName;
        }
    }

    /**
     * What the trainer normalises and at which level (AReaL's {@code NormConfig}, its levels only).
     * A null level means none. Not set at all (both null) is AReaL's {@code reward_norm = None}.
     */
    public record Norm(NormLevel meanLevel, NormLevel stdLevel) {
        /** Neither level: no normalisation. */
        public static final Norm NONE = new Norm(null, null);

        /** Whether any level is set (AReaL: the NormConfig is not None). */
        public boolean isSet() {
            return meanLevel != null || stdLevel != null;
        }

        /** Whether the mean or the standard deviation is taken over the group. */
        public boolean usesGroupStatistics() {
            return meanLevel == NormLevel.GROUP || stdLevel == NormLevel.GROUP;
        }
    }

    /**
     * The {@code actor} section: what the rollout engine needs to know of the trainer.
     *
     * @param minUsableGroupSize {@code actor.min_usable_group_size} as given, or null when derived
     *     (the resolved value is {@link RolloutSettings#minUsableGroupSize()})
     */
    public record Actor(Integer minUsableGroupSize, Norm rewardNorm, Norm advNorm) {
        public Actor {
            Objects.requireNonNull(rewardNorm, "reward_norm");
            Objects.requireNonNull(advNorm, "adv_norm");
        }
    }

    /**
     * The {@code rollout.dataset} section.
     *
     * @param train training prompt files, in order (may be empty: the launcher then supplies prompts)
     * @param eval evaluation prompt files (empty: no evaluation)
     * @param shuffleSeed shuffle training prompts per epoch with this seed, or null for file order
     */
    public record Dataset(List<Path> train, List<Path> eval, Long shuffleSeed, OnMalformed onMalformed) {
        public Dataset {
            train = List.copyOf(train);
            eval = List.copyOf(eval);
            Objects.requireNonNull(onMalformed, "on_malformed");
        }
    }

    /**
     * The {@code rollout} section without its inference keys (see
     * {@link RolloutSettings#inferenceConfig(List)}), derived values resolved.
     *
     * @param tokenizerPath as given; {@code ""} means the built-in tokenizer (the core module's {@code Tokenizers.load})
     * @param maxConcurrentRollouts C, resolved
     * @param queueSize resolved
     * @param nodeCapacity resolved
     * @param evalMaxConcurrent resolved
     * @param workflow a built-in workflow name or a class name, unresolved
     * @param workflowKwargs deep-immutable, keys sorted; values are String, Integer, Long, Double,
     *     Boolean, null, List or Map
     * @param accept {@code all}, {@code drop_equal_rewards} or an {@code AcceptFilter} class name, unresolved
     * @param trainDataParallelSize the trainer's data-parallel ranks that pull batches of their own;
     *     divides {@code consumerBatchSize}
     */
    public record Rollout(
            String experimentName,
            String trialName,
            Path fileroot,
            boolean dumpToFile,
            String tokenizerPath,
            boolean checkTrajectoryFormat,
            int maxConcurrentRollouts,
            int consumerBatchSize,
            long maxHeadOffpolicyness,
            int queueSize,
            StalenessPolicy stalenessPolicy,
            Duration episodeTimeout,
            Duration batchAckTimeout,
            Duration weightUpdateTimeout,
            Duration prepareTimeout,
            int nodeCapacity,
            int evalEvery,
            int evalMaxConcurrent,
            String workflow,
            Map<String, Object> workflowKwargs,
            String evalWorkflow,
            Map<String, Object> evalWorkflowKwargs,
            String accept,
            Dataset dataset,
            int trainDataParallelSize) {
        public Rollout {
            Objects.requireNonNull(experimentName, "experiment_name");
            Objects.requireNonNull(trialName, "trial_name");
            Objects.requireNonNull(fileroot, "fileroot");
            Objects.requireNonNull(tokenizerPath, "tokenizer_path");
            Objects.requireNonNull(stalenessPolicy, "staleness_policy");
            Objects.requireNonNull(episodeTimeout, "episode_timeout");
            Objects.requireNonNull(batchAckTimeout, "batch_ack_timeout");
            Objects.requireNonNull(weightUpdateTimeout, "weight_update_timeout");
            Objects.requireNonNull(prepareTimeout, "prepare_timeout");
            Objects.requireNonNull(workflow, "workflow");
            Objects.requireNonNull(workflowKwargs, "workflow_kwargs");
            Objects.requireNonNull(accept, "accept");
            Objects.requireNonNull(dataset, "dataset");
        }
    }

    private final Rollout rollout;
    private final GenerationConfig gconfig;
    private final GenerationConfig evalGconfig;
    private final Actor actor;
    private final int minUsableGroupSize;
    private final List<ServerAddress> servers;
    // Every inference value but the servers; holds a placeholder address when none is configured,
    // so it never leaves this class as it is.
    private final InferenceConfig inferenceTemplate;
    private final List<String> warnings;
    private final Config config;

    RolloutSettings(
            Rollout rollout,
            GenerationConfig gconfig,
            GenerationConfig evalGconfig,
            Actor actor,
            int minUsableGroupSize,
            List<ServerAddress> servers,
            InferenceConfig inferenceTemplate,
            List<String> warnings,
            Config config) {
        this.rollout = Objects.requireNonNull(rollout, "rollout");
        this.gconfig = Objects.requireNonNull(gconfig, "gconfig");
        this.evalGconfig = Objects.requireNonNull(evalGconfig, "eval_gconfig");
        this.actor = Objects.requireNonNull(actor, "actor");
        this.minUsableGroupSize = minUsableGroupSize;
        this.servers = List.copyOf(servers);
        this.inferenceTemplate = Objects.requireNonNull(inferenceTemplate, "inference");
        this.warnings = List.copyOf(warnings);
        this.config = Objects.requireNonNull(config, "config");
    }

    /** The {@code rollout} section (without the inference keys). */
    public Rollout rollout() {
        return rollout;
    }

    /** Sampling parameters of training rollouts ({@code gconfig}). */
    public GenerationConfig gconfig() {
        return gconfig;
    }

    /** Sampling parameters of evaluation: {@code gconfig} with the keys given in {@code eval_gconfig} replaced. */
    public GenerationConfig evalGconfig() {
        return evalGconfig;
    }

    /** The {@code actor} section. */
    public Actor actor() {
        return actor;
    }

    /** {@code actor.min_usable_group_size}, resolved (semantics §5.4). */
    public int minUsableGroupSize() {
        return minUsableGroupSize;
    }

    /** Whether the trainer or the rollout normalises within groups (decides {@link #minUsableGroupSize()}). */
    public boolean usesGroupStatistics() {
        return actor.rewardNorm().usesGroupStatistics()
                || actor.advNorm().usesGroupStatistics()
                || gconfig.rewardNormalization();
    }

    /** {@code rollout.staleness_policy}. */
    public StalenessPolicy stalenessPolicy() {
        return rollout.stalenessPolicy();
    }

    /** {@code rollout.workflow}: a built-in name or a class name, for the workflow registry to resolve. */
    public String workflow() {
        return rollout.workflow();
    }

    /** {@code rollout.workflow_kwargs}. */
    public Map<String, Object> workflowKwargs() {
        return rollout.workflowKwargs();
    }

    /**
     * The workflow evaluation groups run: {@code rollout.eval_workflow}, or {@code rollout.workflow}
     * when that is null. It is built with {@code eval_gconfig}.
     */
    public String evalWorkflow() {
        return rollout.evalWorkflow() != null ? rollout.evalWorkflow() : rollout.workflow();
    }

    /**
     * The kwargs of {@link #evalWorkflow()}: {@code rollout.eval_workflow_kwargs}, or {@code
     * rollout.workflow_kwargs} when that is null.
     */
    public Map<String, Object> evalWorkflowKwargs() {
        return rollout.evalWorkflowKwargs() != null ? rollout.evalWorkflowKwargs() : rollout.workflowKwargs();
    }

    /** Whether {@code rollout.eval_workflow} or {@code rollout.eval_workflow_kwargs} is set. */
    public boolean evalWorkflowConfigured() {
        return rollout.evalWorkflow() != null || rollout.evalWorkflowKwargs() != null;
    }

    /** {@code rollout.accept}: {@code all}, {@code drop_equal_rewards} or an AcceptFilter class name. */
    public String acceptSpec() {
        return rollout.accept();
    }

    /** {@code rollout.dataset}. */
    public Dataset dataset() {
        return rollout.dataset();
    }

    /** {@code rollout.servers}; empty when the launcher supplies them. */
    public List<ServerAddress> servers() {
        return servers;
    }

    /**
     * The inference configuration with the configured {@code rollout.servers}.
     *
     * @throws InvalidConfigException keyed {@code rollout.servers} when none is configured
     */
    public InferenceConfig inferenceConfig() {
        if (servers.isEmpty()) {
            throw new InvalidConfigException(
                    "rollout.servers",
                    servers,
                    "at least one host:port (none is configured, and no launcher supplied any)");
        }
        return inferenceConfig(servers);
    }

    /**
     * The inference configuration with {@code servers} in place of {@code rollout.servers}: for a
     * launcher that starts the servers itself and knows their addresses only then.
     *
     * @throws InvalidConfigException keyed {@code rollout.servers} when {@code servers} is empty
     *     or has duplicates
     */
    public InferenceConfig inferenceConfig(List<ServerAddress> servers) {
        try {
            return inferenceTemplate.toBuilder().serverAddresses(servers).build();
        } catch (InvalidConfigException e) {
            throw InferenceSection.keyed(e);
        }
    }

    /**
     * {@code {fileroot}/{experiment_name}/{trial_name}}, where dumps and {@code stats.jsonl} go;
     * empty when a name is blank (allowed only while {@code dump_to_file} is off).
     */
    public Optional<Path> runDirectory() {
        if (rollout.experimentName().isBlank() || rollout.trialName().isBlank()) {
            return Optional.empty();
        }
        return Optional.of(rollout.fileroot().resolve(rollout.experimentName()).resolve(rollout.trialName()));
    }

    /**
     * The {@code rollout.agent} section: how agent episodes run and export (validated at load).
     */
    public AgentSection agent() {
        return AgentSection.read(config);
    }

    /** What a launcher starts for a configured agent: its program and the proxy's address (validated at load). */
    public AgentLaunch agentLaunch() {
        return AgentLaunch.read(config);
    }

    /**
     * {@code rollout.python.*}: how the workers of Python reward functions and Python workflows start.
     *
     * @param executable the interpreter
     * @param path prepended to the workers' PYTHONPATH; empty for none
     * @param rewardWorkers workers per reward module at most; null for the pool's default
     * @param workflowWorkers workers of a Python workflow per node; null for the pool's default
     */
    public record Python(String executable, String path, Integer rewardWorkers, Integer workflowWorkers) {}

    /** {@code rollout.python.*}, validated when the settings were read. */
    public Python python() {
        String workers = "rollout.python.reward_workers";
        String workflowWorkers = "rollout.python.workflow_workers";
        return new Python(
                config.getString("rollout.python.executable"),
                config.getString("rollout.python.path"),
                config.hasPath(workers) ? Integer.valueOf(config.getInt(workers)) : null,
                config.hasPath(workflowWorkers) ? Integer.valueOf(config.getInt(workflowWorkers)) : null);
    }

    /**
     * {@code rollout.metrics.*}: where a node without a trainer gateway serves its metrics.
     *
     * @param host the address to bind
     * @param port the port: 0 for any free one, -1 for no listener
     */
    public record Metrics(String host, int port) {}

    /** {@code rollout.server_file}: the file of inference servers re-read while the node runs, if any. */
    public Optional<Path> serverFile() {
        String key = "rollout.server_file";
        return config.hasPath(key) ? Optional.of(Path.of(config.getString(key))) : Optional.empty();
    }

    /** {@code rollout.server_file_interval}, validated when the settings were read. */
    public Duration serverFileInterval() {
        String key = "rollout.server_file_interval";
        ConfigValue v = config.getValue(key);
        String text = String.valueOf(v.unwrapped()).strip();
        if (v.valueType() == ConfigValueType.NUMBER || text.matches("[0-9]*\\.?[0-9]+")) {
            return Duration.ofNanos(Math.round(Double.parseDouble(text) * 1e9));
        }
        return config.getDuration(key);
    }

    /**
     * {@code rollout.failure_breaker.*}: the run stops (a local run) or stops admitting (a node)
     * when {@code threshold} of the last {@code window} groups failed.
     *
     * @param window groups judged; 0 when the breaker is off
     * @param threshold the failed share that trips it, in (0, 1]
     */
    public record FailureBreaker(int window, double threshold) {
        /** Whether a breaker runs at all. */
        public boolean enabled() {
            return window > 0;
        }
    }

    /** {@code rollout.failure_breaker.*}, validated when the settings were read. */
    public FailureBreaker failureBreaker() {
        return new FailureBreaker(
                config.getInt(FailureBreakerSection.WINDOW), config.getDouble(FailureBreakerSection.THRESHOLD));
    }

    /** {@code rollout.local.keep_weights}: the newest weight files {@code rollout local} keeps. */
    public int localKeepWeights() {
        return config.getInt("rollout.local.keep_weights");
    }

    /** {@code rollout.metrics.*}, validated when the settings were read. */
    public Metrics metrics() {
        return new Metrics(config.getString("rollout.metrics.host"), config.getInt("rollout.metrics.port"));
    }

    /** {@code rollout.launch.*}: the inference servers this node starts itself, validated at load. */
    public ServerLaunch launch() {
        return LaunchSection.read(config, rollout.fileroot());
    }

    /** Legal but questionable combinations found at load (also logged then), one sentence each. */
    public List<String> warnings() {
        return warnings;
    }

    /**
     * The whole resolved configuration: the user's (including its {@code pekko} section) over the
     * defaults of {@code reference.conf}. Pass it to the ActorSystem; Pekko adds its own defaults.
     */
    public Config config() {
        return config;
    }

    @Override
    public String toString() {
        return "RolloutSettings{" + rollout + ", gconfig=" + gconfig + ", eval_gconfig=" + evalGconfig + ", " + actor
                + ", min_usable_group_size=" + minUsableGroupSize + ", servers=" + servers + "}";
    }
}
