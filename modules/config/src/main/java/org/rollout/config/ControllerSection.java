package org.rollout.config;

import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The controller keys of the {@code rollout} section: the tokenizer, the format check, concurrency
 * and batching (semantics §6.8), the staleness policy, the timeouts, evaluation, the workflow and
 * the accept filter. Each is null when it failed; {@link #toRollout} resolves the derived values.
 */
record ControllerSection(
        String tokenizerPath,
        Boolean checkTrajectoryFormat,
        Integer maxConcurrentRollouts,
        Integer consumerBatchSize,
        Long maxHeadOffpolicyness,
        Integer trainDataParallelSize,
        Integer queueSize,
        StalenessPolicy stalenessPolicy,
        Duration episodeTimeout,
        Duration batchAckTimeout,
        Duration weightUpdateTimeout,
        Duration prepareTimeout,
        Integer nodeCapacity,
        Integer evalEvery,
        Integer evalMaxConcurrent,
        String workflow,
        Map<String, Object> workflowKwargs,
        String evalWorkflow,
        Map<String, Object> evalWorkflowKwargs,
        String accept) {

    /** How {@code queue_size} is derived from {@code max_concurrent_rollouts} when null (semantics §6.8). */
    static final int QUEUE_SIZE_FACTOR = 16;

    private static final Pattern CLASS_NAME =
            Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*([.#$][\\p{L}_$][\\p{L}\\p{N}_$]*)*");
    private static final Set<String> ACCEPT_KEYWORDS = Set.of("all", "drop_equal_rewards");

    /** Reads the keys, in reference.conf order. */
    static ControllerSection read(ConfigReader r) {
        String tokenizerPath = tokenizerPath(r);
        Boolean checkFormat = r.bool("rollout.check_trajectory_format");
        Integer maxConcurrent = r.intValue(
                "rollout.max_concurrent_rollouts", 1, true, "an integer >= 1, or null for consumer_batch_size");
        Integer batch = r.intValue("rollout.consumer_batch_size", 1, false, "an integer >= 1");
        Long eta = r.integer("rollout.max_head_offpolicyness", 0, Long.MAX_VALUE, false, "an integer >= 0");
        Integer ranks = trainDataParallelSize(r, batch);
        String queueAllowed = "an integer >= consumer_batch_size (" + (batch != null ? batch : 1)
                + "), or null for max_concurrent_rollouts × " + QUEUE_SIZE_FACTOR;
        Integer queueSize = r.intValue("rollout.queue_size", batch != null ? batch : 1, true, queueAllowed);
        StalenessPolicy policy = stalenessPolicy(r);
        Duration episodeTimeout = r.seconds("rollout.episode_timeout", true);
        Duration ackTimeout = r.seconds("rollout.batch_ack_timeout", true);
        Duration updateTimeout = r.seconds("rollout.weight_update_timeout", true);
        Duration prepareTimeout = r.seconds("rollout.prepare_timeout", true);
        Integer nodeCapacity =
                r.intValue("rollout.node_capacity", 1, true, "an integer >= 1, or null for max_concurrent_rollouts");
        Integer evalEvery = r.intValue("rollout.eval_every", 0, false, "an integer >= 0 (0: one pass at start)");
        Integer evalMaxConcurrent = r.intValue(
                "rollout.eval_max_concurrent", 1, true, "an integer >= 1, or null for max_concurrent_rollouts");
        String workflow = workflow(r);
        Map<String, Object> kwargs = r.object("rollout.workflow_kwargs", "an object of keyword arguments, {} for none");
        String evalWorkflow = evalWorkflow(r);
        Map<String, Object> evalKwargs = evalWorkflowKwargs(r);
        String accept = accept(r);
        return new ControllerSection(
                tokenizerPath,
                checkFormat,
                maxConcurrent,
                batch,
                eta,
                ranks,
                queueSize,
                policy,
                episodeTimeout,
                ackTimeout,
                updateTimeout,
                prepareTimeout,
                nodeCapacity,
                evalEvery,
                evalMaxConcurrent,
                workflow,
                kwargs,
                evalWorkflow,
                evalKwargs,
                accept);
    }

    /** C: {@code max_concurrent_rollouts}, or {@code consumer_batch_size} when null (1 when that failed). */
    int concurrency() {
        return maxConcurrentRollouts != null
                ? maxConcurrentRollouts
                : consumerBatchSize != null ? consumerBatchSize : 1;
    }

    /** The {@code rollout} section with the derived values resolved; only when nothing failed. */
    RolloutSettings.Rollout toRollout(DumpSection dump, RolloutSettings.Dataset dataset) {
        int c = concurrency();
        int queue = queueSize != null ? queueSize : (int) Math.min(Integer.MAX_VALUE, (long) c * QUEUE_SIZE_FACTOR);
        return new RolloutSettings.Rollout(
                dump.experimentName(),
                dump.trialName(),
                dump.fileroot(),
                dump.dumpToFile(),
                tokenizerPath,
                checkTrajectoryFormat,
                c,
                consumerBatchSize,
                maxHeadOffpolicyness,
                queue,
                stalenessPolicy,
                episodeTimeout,
                batchAckTimeout,
                weightUpdateTimeout,
                prepareTimeout,
                nodeCapacity != null ? nodeCapacity : c,
                evalEvery,
                evalMaxConcurrent != null ? evalMaxConcurrent : c,
                workflow,
                workflowKwargs,
                evalWorkflow,
                evalWorkflowKwargs,
                accept,
                dataset,
                trainDataParallelSize);
    }

    /** Legal but questionable combinations of these keys (and the dataset's), one sentence each. */
    void warnings(RolloutSettings.Dataset dataset, List<String> warnings) {
        Integer maxConcurrent = maxConcurrentRollouts;
        Integer batch = consumerBatchSize;
        if (maxConcurrent != null && batch != null && maxConcurrent < batch) {
            warnings.add("rollout.max_concurrent_rollouts = " + maxConcurrent
                    + " is below rollout.consumer_batch_size = " + batch + ": fewer groups run at once than a"
                    + " batch holds, so every batch takes several rounds of generation");
        }
        Long eta = maxHeadOffpolicyness;
        if (stalenessPolicy == StalenessPolicy.CANCEL && eta != null && eta == 0) {
            warnings.add("rollout.staleness_policy = cancel with rollout.max_head_offpolicyness = 0 cancels"
                    + " every group still running when a new weight version is published");
        }
        if (evalEvery != null
                && evalEvery > 0
                && dataset != null
                && dataset.eval().isEmpty()) {
            warnings.add("rollout.eval_every = " + evalEvery + " has no effect: rollout.dataset.eval is empty");
        }
    }

    /** The most data-parallel ranks: a batch id carries its rank in 8 bits. */
    static final int MAX_TRAIN_DATA_PARALLEL_SIZE = 256;

    /**
     * {@code rollout.train_data_parallel_size}: 1 to 256, and a divisor of {@code consumer_batch_size}
     * (when that one is valid): each rank's batch is an equal share of a step.
     */
    private static Integer trainDataParallelSize(ConfigReader r, Integer batch) {
        String key = "rollout.train_data_parallel_size";
        Long n = r.integer(key, 1, MAX_TRAIN_DATA_PARALLEL_SIZE, false, "an integer from 1 to 256");
        if (n == null) {
            return null;
        }
        if (batch != null && batch % n != 0) {
            r.error(
                    key,
                    n,
                    "a divisor of rollout.consumer_batch_size (" + batch
                            + "): each rank pulls batches of consumer_batch_size / train_data_parallel_size groups");
            return null;
        }
        return n.intValue();
    }

    /**
     * Checks only that the path exists (or names the built-in tokenizer); loading it is the core
     * module's, at start-up.
     */
    private static String tokenizerPath(ConfigReader r) {
        String key = "rollout.tokenizer_path";
        String allowed = "\"\" for the built-in byte-level tokenizer, or an existing Hugging Face tokenizer"
                + " directory or tokenizer.json file";
        String v = r.string(key, false, allowed);
        if (v == null || RolloutSettings.BUILTIN_TOKENIZER_NAMES.contains(v)) {
            return v;
        }
        try {
            if (!Files.exists(Path.of(v))) {
                r.error(key, v, allowed);
                return null;
            }
        } catch (InvalidPathException e) {
            r.error(key, v, allowed);
            return null;
        }
        return v;
    }

    private static StalenessPolicy stalenessPolicy(ConfigReader r) {
        Map<String, StalenessPolicy> options = new LinkedHashMap<>();
        for (StalenessPolicy p : StalenessPolicy.values()) {
            options.put(p.configName(), p);
        }
        return r.choice("rollout.staleness_policy", options, false, "\"admission\" or \"cancel\"");
    }

    private static final String WORKFLOW_ALLOWED = "a built-in workflow name (rlvr, multi_turn, demo), a class"
            + " name (pkg.Class, pkg.Class.FIELD or pkg.Class#FIELD), or a Python class (python:pkg.module:Class)";

    /** {@code python:package.module:ClassName}: a Python workflow (module and class are Python identifiers). */
    private static final Pattern PYTHON_CLASS =
            Pattern.compile("python:[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*");

    private static String workflow(ConfigReader r) {
        return workflowName(r, "rollout.workflow", false, WORKFLOW_ALLOWED);
    }

    /** Null when absent or null: evaluation runs {@code rollout.workflow}. */
    private static String evalWorkflow(ConfigReader r) {
        return workflowName(r, "rollout.eval_workflow", true, "null for rollout.workflow, or " + WORKFLOW_ALLOWED);
    }

    private static String workflowName(ConfigReader r, String key, boolean nullable, String allowed) {
        String v = r.string(key, nullable, allowed);
        if (v != null
                && !CLASS_NAME.matcher(v).matches()
                && !PYTHON_CLASS.matcher(v).matches()) {
            r.error(key, v, allowed);
            return null;
        }
        return v;
    }

    /** Null when absent or null: evaluation takes {@code rollout.workflow_kwargs}. */
    private static Map<String, Object> evalWorkflowKwargs(ConfigReader r) {
        String key = "rollout.eval_workflow_kwargs";
        ConfigValue v = r.value(key);
        if (v == null || v.valueType() == ConfigValueType.NULL) {
            return null;
        }
        return r.object(key, "null for rollout.workflow_kwargs, or an object of keyword arguments ({} for none)");
    }

    private static String accept(ConfigReader r) {
        String key = "rollout.accept";
        String allowed = "\"all\", \"drop_equal_rewards\", or the fully qualified name of an AcceptFilter"
                + " class (pkg.Class, pkg.Class.FIELD or pkg.Class#FIELD)";
        String v = r.string(key, false, allowed);
        if (v != null
                && !ACCEPT_KEYWORDS.contains(v)
                && !(CLASS_NAME.matcher(v).matches() && (v.contains(".") || v.contains("#")))) {
            r.error(key, v, allowed);
            return null;
        }
        return v;
    }
}
