package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigOriginFactory;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueFactory;
import com.typesafe.config.ConfigValueType;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.RolloutSettings.Actor;
import org.rollout.cluster.RolloutSettings.Dataset;
import org.rollout.cluster.RolloutSettings.Norm;
import org.rollout.cluster.RolloutSettings.NormLevel;
import org.rollout.cluster.RolloutSettings.Rollout;
import org.rollout.core.MinUsableGroupSize;
import org.rollout.core.Tokenizers;
import org.rollout.inference.Backend;
import org.rollout.inference.InferenceConfig;
import org.rollout.inference.InterruptMode;
import org.rollout.inference.RoutingStrategy;
import org.rollout.inference.ServerAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads the engine's configuration: HOCON with AReaL's key names, defaults from {@code
 * reference.conf}, validated at start-up into a {@link RolloutSettings}.
 *
 * <pre>
 *   reference.conf (rollout, gconfig, eval_gconfig, actor)
 *        ▲ fallback
 *   file (may be absent) ◄── overrides "key=value", in order, the last one winning
 *        │ resolve (${…} substitutions, ${?ENV} variables)
 *        ▼
 *   unknown keys ─► typed reading (strict types, ranges) ─► combinations ─► RolloutSettings
 *                   every problem collected; one InvalidConfigException, or ConfigErrors for several
 * </pre>
 *
 * <p><b>Overrides.</b> {@code key=value}, split at the first {@code =}; the key is a HOCON path
 * ({@code rollout.consumer_batch_size}). The value is read as a HOCON value ({@code 8}, {@code
 * 0.7}, {@code true}, {@code null}, {@code ["a", "b"]}, {@code {k = 1}}, {@code "quoted"}); when
 * that fails, or when HOCON would read an unquoted string otherwise than written ({@code //} and
 * {@code #} start comments, {@code :} ends a key), the text is taken as written: as a number when
 * it spells one ({@code .95}, {@code +3}), else as a plain string — or, when it is bracketed ({@code [127.0.0.1:30000,127.0.0.1:30001]}, the shell having eaten
 * the quotes), as a list of its comma-separated elements, each read the same way. An empty value
 * is the empty string. An override without {@code =} or with an empty key is an error naming it.
 *
 * <p><b>Errors</b> are {@link InvalidConfigException}s keyed by the full dotted path ({@code
 * gconfig.top_p}), with the value and what is allowed; all are collected, then one is thrown alone,
 * or several as {@link ConfigErrors}. Warnings (legal but questionable combinations) are logged
 * and kept in {@link RolloutSettings#warnings()}.
 *
 * <p><b>Pitfalls.</b> Top-level keys other than our sections and {@code pekko} are refused, so
 * helper sections used only for substitutions are too. Relative paths resolve against the working
 * directory, not the file's. System properties are not merged. Stateless and thread-safe.
 */
public final class RolloutConfig {
    private static final Logger LOG = LoggerFactory.getLogger(RolloutConfig.class);

    /** How {@code queue_size} is derived from {@code max_concurrent_rollouts} when null (semantics §6.8). */
    static final int QUEUE_SIZE_FACTOR = 16;

    private static final String DIRECTORY_NAME = "a single directory name (no '/', '\\', '.' or '..')";
    private static final Pattern CLASS_NAME =
            Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*([.#$][\\p{L}_$][\\p{L}\\p{N}_$]*)*");
    // Numbers in an override that HOCON does not read as numbers (.95, +3, 1.).
    private static final Pattern LOOSE_INTEGER = Pattern.compile("[+-]?\\d{1,18}");
    private static final Pattern LOOSE_DECIMAL = Pattern.compile("[+-]?(\\d+\\.\\d*|\\.\\d+)([eE][+-]?\\d+)?");
    private static final Set<String> ACCEPT_KEYWORDS = Set.of("all", "drop_equal_rewards");
    private static final String NORM_LEVEL = "\"batch\", \"group\" or null";
    private static final Map<String, NormLevel> NORM_LEVELS =
            Map.of("batch", NormLevel.BATCH, "group", NormLevel.GROUP);

    /** Stands in for the servers while validating the other inference keys when none is configured. */
    private static final ServerAddress PLACEHOLDER_SERVER = new ServerAddress("127.0.0.1", 1);

    private RolloutConfig() {}

    /**
     * Loads {@code file} (may be null: defaults only) with {@code overrides} applied over it.
     *
     * @param overrides {@code key=value} strings, applied in order
     * @throws InvalidConfigException when exactly one thing is wrong (a value, a key, an override,
     *     or the file: missing, unreadable or not HOCON)
     * @throws ConfigErrors when several are
     */
    public static RolloutSettings load(Path file, List<String> overrides) {
        return load(file, overrides, ConfigFactory.empty());
    }

    /**
     * Like {@link #load(Path, List)}, with a {@code profile} between the file and the defaults of
     * {@code reference.conf}: a launcher's own defaults (e.g. the demo's batch size) that a user's
     * file and overrides still win over. The profile is validated like user input.
     */
    public static RolloutSettings load(Path file, List<String> overrides, Config profile) {
        List<InvalidConfigException> errors = new ArrayList<>();
        Config over = ConfigFactory.empty();
        for (String o : overrides) {
            try {
                over = parseOverride(o).withFallback(over);
            } catch (InvalidConfigException e) {
                errors.add(e);
            }
        }
        Config fromFile = ConfigFactory.empty();
        if (file != null) {
            try {
                fromFile = parseFile(file);
            } catch (InvalidConfigException e) {
                errors.add(e);
            }
        }
        throwIfAny(errors);
        return load(over.withFallback(fromFile).withFallback(profile));
    }

    /**
     * Validates {@code config}, the user's configuration (not yet merged with the defaults, and not
     * {@code ConfigFactory.load()}, whose system properties would be unknown sections), over the
     * defaults of {@code reference.conf}.
     *
     * @throws InvalidConfigException when exactly one thing is wrong
     * @throws ConfigErrors when several are
     */
    public static RolloutSettings load(Config config) {
        ConfigObject reference = reference();
        Config merged;
        try {
            merged = config.withFallback(reference).resolve();
        } catch (ConfigException e) {
            throw new InvalidConfigException(
                    "config",
                    e.origin() == null ? null : e.origin().description(),
                    "substitutions that resolve (" + e.getMessage() + ")");
        }
        ConfigReader r = new ConfigReader(merged.root());
        KnownKeys.of(reference).check(config.root(), merged.root(), r);
        RolloutSettings settings = new Reading(r, merged).read();
        throwIfAny(r.errors());
        for (String w : settings.warnings()) {
            LOG.warn("configuration: {}", w);
        }
        return settings;
    }

    /** Our sections of every {@code reference.conf} on the class path, without system properties. */
    static ConfigObject reference() {
        Config all = ConfigFactory.parseResources(RolloutConfig.class.getClassLoader(), "reference.conf")
                .resolve();
        Config ours = ConfigFactory.empty();
        for (String s : KnownKeys.SECTIONS) {
            ConfigValue v = all.root().get(s);
            if (v == null) {
                throw new IllegalStateException("reference.conf on the class path has no section '" + s
                        + "': the cluster module's resources are missing");
            }
            ours = ours.withValue(s, v);
        }
        return ours.root();
    }

    private static void throwIfAny(List<InvalidConfigException> errors) {
        if (errors.size() == 1) {
            throw errors.get(0);
        }
        if (!errors.isEmpty()) {
            throw new ConfigErrors(errors);
        }
    }

    private static Config parseFile(Path file) {
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            throw new InvalidConfigException("config file", file.toString(), "an existing, readable HOCON file");
        }
        try {
            return ConfigFactory.parseFile(
                    file.toFile(), ConfigParseOptions.defaults().setAllowMissing(false));
        } catch (ConfigException e) {
            throw new InvalidConfigException("config file", file.toString(), "valid HOCON (" + e.getMessage() + ")");
        }
    }

    // ---- overrides ----

    /** One {@code key=value} override as a configuration with that one value. */
    static Config parseOverride(String override) {
        String example = "key=value, e.g. rollout.consumer_batch_size=8";
        int eq = override.indexOf('=');
        if (eq < 0) {
            throw new InvalidConfigException("override", override, example);
        }
        String key = override.substring(0, eq).strip();
        if (key.isEmpty()) {
            throw new InvalidConfigException("override", override, example + " (the key is empty)");
        }
        List<String> path;
        try {
            path = ConfigUtil.splitPath(key);
        } catch (ConfigException e) {
            throw new InvalidConfigException("override", override, example + " (the key is not a HOCON path)");
        }
        String origin = "override " + override;
        Object value = overrideValue(override.substring(eq + 1));
        ConfigValue v = value instanceof ConfigValue parsed
                ? parsed.withOrigin(ConfigOriginFactory.newSimple(origin))
                : ConfigValueFactory.fromAnyRef(value, origin);
        return ConfigFactory.empty().withValue(ConfigUtil.joinPath(path), v);
    }

    /**
     * The value of an override (see the class comment): the parsed HOCON value, which keeps a
     * number as written (for a string key, 007 stays 007), or a plain Java value when read as
     * written.
     */
    static Object overrideValue(String raw) {
        String text = raw.strip();
        if (text.isEmpty()) {
            return "";
        }
        try {
            Config parsed = ConfigFactory.parseString("v = " + text);
            ConfigValue v = parsed.isResolved() ? parsed.root().get("v") : null;
            if (v == null) {
                return text;
            }
            if (v.valueType() == ConfigValueType.STRING && !text.startsWith("\"")) {
                // A number HOCON does not spell (.95, +3, 1.), or an unquoted string HOCON may have cut
                // at a comment or re-spaced: read as written.
                return looseNumber(text);
            }
            return v;
        } catch (ConfigException e) {
            if (text.length() >= 2 && text.startsWith("[") && text.endsWith("]")) {
                String inner = text.substring(1, text.length() - 1).strip();
                List<Object> elements = new ArrayList<>();
                if (!inner.isEmpty()) {
                    for (String element : inner.split(",", -1)) {
                        Object e2 = overrideValue(element);
                        elements.add(e2 instanceof ConfigValue cv ? cv.unwrapped() : e2);
                    }
                }
                return elements;
            }
            return looseNumber(text);
        }
    }

    /** {@code text} as a number when it spells one the way Java does, else as itself. */
    private static Object looseNumber(String text) {
        if (LOOSE_INTEGER.matcher(text).matches()) {
            long l = Long.parseLong(text);
            return l == (int) l ? (Object) (int) l : (Object) l;
        }
        if (LOOSE_DECIMAL.matcher(text).matches()) {
            return Double.parseDouble(text);
        }
        return text;
    }

    // ---- inference ----

    /** An error of InferenceConfig keyed under {@code rollout.}, its {@code addresses} as {@code servers}. */
    static InvalidConfigException inferenceKeyed(InvalidConfigException e) {
        if (e.key().equals("addresses")) {
            return new InvalidConfigException("rollout.servers", e.value(), e.allowed());
        }
        return e.under("rollout");
    }

    private static InferenceConfig buildInference(Map<String, Object> v, List<ServerAddress> servers) {
        InferenceConfig.Builder b = InferenceConfig.builder().serverAddresses(servers);
        for (Map.Entry<String, Object> e : v.entrySet()) {
            Object x = e.getValue();
            switch (e.getKey()) {
                case "backend" -> b.backend((String) x);
                case "request_timeout" -> b.requestTimeout((Duration) x);
                case "request_retries" -> b.requestRetries((Integer) x);
                case "setup_timeout" -> b.setupTimeout((Duration) x);
                case "routing_strategy" -> b.routingStrategy(RoutingStrategy.fromConfig((String) x));
                case "sticky_by_rid" -> b.stickyByRid((Boolean) x);
                case "sticky_slack" -> b.stickySlack((Integer) x);
                case "health_check_interval" -> b.healthCheckInterval((Duration) x);
                case "health_check_timeout" -> b.healthCheckTimeout((Duration) x);
                case "control_timeout" -> b.controlTimeout((Duration) x);
                case "retry_backoff_initial" -> b.retryBackoffInitial((Duration) x);
                case "retry_backoff_max" -> b.retryBackoffMax((Duration) x);
                case "pause_grace_period" -> b.pauseGracePeriod((Duration) x);
                case "interrupt_mode" -> b.interruptMode(InterruptMode.fromConfig((String) x));
                default -> throw new IllegalStateException("no inference key " + e.getKey());
            }
        }
        return b.build();
    }

    // ---- gconfig ----

    /** The gconfig keys, their types and what is allowed (as GenerationConfig words it). */
    private enum GKey {
        N_SAMPLES("n_samples", Kind.INT, "an integer >= 1"),
        MAX_NEW_TOKENS("max_new_tokens", Kind.INT, "an integer >= 1"),
        MIN_NEW_TOKENS("min_new_tokens", Kind.INT, "an integer in [0, max_new_tokens]"),
        MAX_TOKENS("max_tokens", Kind.INT, "an integer >= 1"),
        GREEDY("greedy", Kind.BOOL, "true or false"),
        TOP_P("top_p", Kind.NUMBER, "a number in (0, 1]"),
        TOP_K("top_k", Kind.INT, "an integer >= 1, or -1 for no limit"),
        TEMPERATURE("temperature", Kind.NUMBER, "a finite number >= 0"),
        STOP_TOKEN_IDS("stop_token_ids", Kind.INT_LIST, "a list of token ids >= 0"),
        IGNORE_EOS("ignore_eos", Kind.BOOL, "true or false"),
        SKIP_SPECIAL_TOKENS("skip_special_tokens", Kind.BOOL, "true or false"),
        STOP("stop", Kind.STRING_LIST_OR_NULL, "a list of non-empty strings, or null"),
        FREQUENCY_PENALTY("frequency_penalty", Kind.NUMBER, "a number in [-2, 2]"),
        SEED("seed", Kind.LONG_OR_NULL, "an integer, or null"),
        LORA_NAME("lora_name", Kind.STRING, "a string"),
        USE_BEAM_SEARCH("use_beam_search", Kind.BOOL, "true or false"),
        REWARD_NORMALIZATION("reward_normalization", Kind.BOOL, "true or false"),
        REWARD_NORMALIZATION_USE_STD("reward_normalization_use_std", Kind.BOOL, "true or false"),
        DROP_INCOMPLETE_GROUP("drop_incomplete_group", Kind.BOOL, "true or false");

        enum Kind {
            INT,
            NUMBER,
            BOOL,
            INT_LIST,
            STRING_LIST_OR_NULL,
            LONG_OR_NULL,
            STRING
        }

        final String key;
        final Kind kind;
        final String allowed;

        GKey(String key, Kind kind, String allowed) {
            this.key = key;
            this.kind = kind;
            this.allowed = allowed;
        }

        /** The value at {@code path} read as this key's type; {@link #ABSENT} after an error. */
        Object read(ConfigReader r, String path) {
            Object v = switch (kind) {
                case INT -> r.integer(path, Integer.MIN_VALUE, Integer.MAX_VALUE, false, allowed);
                case NUMBER -> r.number(path, allowed);
                case BOOL -> r.bool(path);
                case INT_LIST -> r.integers(path, allowed);
                case STRING_LIST_OR_NULL -> r.strings(path, true, false, allowed);
                case LONG_OR_NULL -> r.integer(path, Long.MIN_VALUE, Long.MAX_VALUE, true, allowed);
                case STRING -> r.string(path, false, allowed);
            };
            if (!r.ok(path)) {
                return ABSENT;
            }
            return kind == Kind.INT ? (Object) ((Long) v).intValue() : v;
        }

        static final Object ABSENT = new Object();

        void apply(GenerationConfig.Builder b, Object v) {
            switch (this) {
                case N_SAMPLES -> b.nSamples((Integer) v);
                case MAX_NEW_TOKENS -> b.maxNewTokens((Integer) v);
                case MIN_NEW_TOKENS -> b.minNewTokens((Integer) v);
                case MAX_TOKENS -> b.maxTokens((Integer) v);
                case GREEDY -> b.greedy((Boolean) v);
                case TOP_P -> b.topP((Double) v);
                case TOP_K -> b.topK((Integer) v);
                case TEMPERATURE -> b.temperature((Double) v);
                case STOP_TOKEN_IDS -> {
                    @SuppressWarnings("unchecked")
                    List<Integer> ids = (List<Integer>) v;
                    b.stopTokenIds(ids);
                }
                case IGNORE_EOS -> b.ignoreEos((Boolean) v);
                case SKIP_SPECIAL_TOKENS -> b.skipSpecialTokens((Boolean) v);
                case STOP -> {
                    @SuppressWarnings("unchecked")
                    List<String> stop = (List<String>) v;
                    b.stop(stop);
                }
                case FREQUENCY_PENALTY -> b.frequencyPenalty((Double) v);
                case SEED -> b.seed((Long) v);
                case LORA_NAME -> b.loraName((String) v);
                case USE_BEAM_SEARCH -> b.useBeamSearch((Boolean) v);
                case REWARD_NORMALIZATION -> b.rewardNormalization((Boolean) v);
                case REWARD_NORMALIZATION_USE_STD -> b.rewardNormalizationUseStd((Boolean) v);
                case DROP_INCOMPLETE_GROUP -> b.dropIncompleteGroup((Boolean) v);
            }
        }

        static GenerationConfig build(Map<GKey, Object> values) {
            GenerationConfig.Builder b = GenerationConfig.builder();
            values.forEach((k, v) -> k.apply(b, v));
            return b.build();
        }

        static GKey of(String key) {
            for (GKey k : values()) {
                if (k.key.equals(key)) {
                    return k;
                }
            }
            return null;
        }
    }

    /**
     * Builds with {@code build}; each error is reported (through {@code rekey}), its key dropped
     * back to the default and the build retried, so that every rule broken is reported once.
     * Returns null when some key could not be dropped (then an error was reported).
     */
    private static <K, T> T buildReporting(
            Map<K, Object> values,
            Function<Map<K, Object>, T> build,
            Function<String, K> keyOf,
            Function<InvalidConfigException, InvalidConfigException> rekey,
            ConfigReader r) {
        Map<K, Object> left = new LinkedHashMap<>(values);
        boolean reported = false;
        while (true) {
            try {
                return build.apply(left);
            } catch (InvalidConfigException e) {
                K k = keyOf.apply(e.key());
                if (k == null || !left.containsKey(k)) {
                    // A default broke a rule together with a value already reported (e.g.
                    // retry_backoff_max's default below a large retry_backoff_initial): nothing new.
                    if (!reported) {
                        r.error(rekey.apply(e));
                    }
                    return null;
                }
                r.error(rekey.apply(e));
                reported = true;
                left.remove(k);
            }
        }
    }

    // ---- reading ----

    /** One load's reading of the merged tree, in reference.conf order, then the combinations. */
    private static final class Reading {
        private final ConfigReader r;
        private final Config merged;
        private final List<String> warnings = new ArrayList<>();
        private Map<GKey, Object> gconfigRead = Map.of();

        Reading(ConfigReader r, Config merged) {
            this.r = r;
            this.merged = merged;
        }

        RolloutSettings read() {
            String experiment = directoryName("rollout.experiment_name");
            String trial = directoryName("rollout.trial_name");
            Path fileroot = path("rollout.fileroot");
            Boolean dump = r.bool("rollout.dump_to_file");
            String tokenizerPath = tokenizerPath();
            Boolean checkFormat = r.bool("rollout.check_trajectory_format");
            Integer maxConcurrent = r.intValue(
                    "rollout.max_concurrent_rollouts", 1, true, "an integer >= 1, or null for consumer_batch_size");
            Integer batch = r.intValue("rollout.consumer_batch_size", 1, false, "an integer >= 1");
            Long eta = r.integer("rollout.max_head_offpolicyness", 0, Long.MAX_VALUE, false, "an integer >= 0");
            int c = maxConcurrent != null ? maxConcurrent : batch != null ? batch : 1;
            String queueAllowed = "an integer >= consumer_batch_size (" + (batch != null ? batch : 1)
                    + "), or null for max_concurrent_rollouts × " + QUEUE_SIZE_FACTOR;
            Integer queueSize = r.intValue("rollout.queue_size", batch != null ? batch : 1, true, queueAllowed);
            StalenessPolicy policy = stalenessPolicy();
            Duration episodeTimeout = r.seconds("rollout.episode_timeout", true);
            Duration ackTimeout = r.seconds("rollout.batch_ack_timeout", true);
            Duration updateTimeout = r.seconds("rollout.weight_update_timeout", true);
            Duration prepareTimeout = r.seconds("rollout.prepare_timeout", true);
            Integer nodeCapacity = r.intValue(
                    "rollout.node_capacity", 1, true, "an integer >= 1, or null for max_concurrent_rollouts");
            Integer evalEvery = r.intValue("rollout.eval_every", 0, false, "an integer >= 0 (0: one pass at start)");
            Integer evalMaxConcurrent = r.intValue(
                    "rollout.eval_max_concurrent", 1, true, "an integer >= 1, or null for max_concurrent_rollouts");
            String workflow = workflow();
            Map<String, Object> kwargs =
                    r.object("rollout.workflow_kwargs", "an object of keyword arguments, {} for none");
            String accept = accept();
            Dataset dataset = dataset();
            List<ServerAddress> servers = servers();
            InferenceConfig inference = inference(servers);
            largePayloads();
            python();

            GenerationConfig gconfig = gconfig();
            GenerationConfig evalGconfig = evalGconfig(inference);
            Actor actor = actor();

            // ---- combinations ----
            if (Boolean.TRUE.equals(dump)) {
                requireNonBlankForDump("rollout.experiment_name", experiment);
                requireNonBlankForDump("rollout.trial_name", trial);
                if (fileroot != null && fileroot.toString().isBlank()) {
                    r.error(
                            "rollout.fileroot",
                            fileroot.toString(),
                            "a non-blank path while rollout.dump_to_file is true");
                }
            }
            Integer minUsable = minUsableGroupSize(gconfig, actor);
            if (gconfig != null && inference != null) {
                beamSearch("gconfig", gconfig, inference);
            }
            warnings(batch, maxConcurrent, c, eta, policy, evalEvery, dataset, gconfig, actor);

            if (!r.errors().isEmpty()) {
                return null;
            }
            int queue = queueSize != null ? queueSize : (int) Math.min(Integer.MAX_VALUE, (long) c * QUEUE_SIZE_FACTOR);
            Rollout rollout = new Rollout(
                    experiment,
                    trial,
                    fileroot,
                    dump,
                    tokenizerPath,
                    checkFormat,
                    c,
                    batch,
                    eta,
                    queue,
                    policy,
                    episodeTimeout,
                    ackTimeout,
                    updateTimeout,
                    prepareTimeout,
                    nodeCapacity != null ? nodeCapacity : c,
                    evalEvery,
                    evalMaxConcurrent != null ? evalMaxConcurrent : c,
                    workflow,
                    kwargs,
                    accept,
                    dataset);
            return new RolloutSettings(
                    rollout, gconfig, evalGconfig, actor, minUsable, servers, inference, warnings, merged);
        }

        // ---- rollout ----

        private String directoryName(String key) {
            String v = r.string(key, false, "a string: " + DIRECTORY_NAME);
            if (v != null && !v.isBlank() && (v.contains("/") || v.contains("\\") || v.equals(".") || v.equals(".."))) {
                r.error(key, v, DIRECTORY_NAME);
                return null;
            }
            return v;
        }

        private void requireNonBlankForDump(String key, String value) {
            if (value != null && value.isBlank()) {
                r.error(
                        key,
                        value,
                        "a non-blank single directory name (no '/', '\\', '.' or '..') while rollout.dump_to_file is"
                                + " true");
            }
        }

        private Path path(String key) {
            String v = r.string(key, false, "a path");
            if (v == null) {
                return null;
            }
            try {
                return Path.of(v);
            } catch (InvalidPathException e) {
                r.error(key, v, "a valid path (" + e.getReason() + ")");
                return null;
            }
        }

        private String tokenizerPath() {
            String key = "rollout.tokenizer_path";
            String allowed = "\"\" for the built-in byte-level tokenizer, or an existing Hugging Face tokenizer"
                    + " directory or tokenizer.json file";
            String v = r.string(key, false, allowed);
            if (v == null || Tokenizers.BUILTIN_NAMES.contains(v)) {
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

        private StalenessPolicy stalenessPolicy() {
            Map<String, StalenessPolicy> options = new LinkedHashMap<>();
            for (StalenessPolicy p : StalenessPolicy.values()) {
                options.put(p.configName(), p);
            }
            return r.choice("rollout.staleness_policy", options, false, "\"admission\" or \"cancel\"");
        }

        private String workflow() {
            String key = "rollout.workflow";
            String allowed = "a built-in workflow name (rlvr, multi_turn, demo) or a class name (pkg.Class,"
                    + " pkg.Class.FIELD or pkg.Class#FIELD)";
            String v = r.string(key, false, allowed);
            if (v != null && !CLASS_NAME.matcher(v).matches()) {
                r.error(key, v, allowed);
                return null;
            }
            return v;
        }

        private String accept() {
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

        private Dataset dataset() {
            List<Path> train = datasetFiles("rollout.dataset.train");
            List<Path> eval = datasetFiles("rollout.dataset.eval");
            Long seed = r.integer(
                    "rollout.dataset.shuffle_seed",
                    Long.MIN_VALUE,
                    Long.MAX_VALUE,
                    true,
                    "an integer, or null for file order");
            JsonlPromptSource.OnMalformed onMalformed = r.choice(
                    "rollout.dataset.on_malformed",
                    Map.of("skip", JsonlPromptSource.OnMalformed.SKIP, "fail", JsonlPromptSource.OnMalformed.FAIL),
                    false,
                    "\"skip\" or \"fail\"");
            if (train == null || eval == null || onMalformed == null || !r.ok("rollout.dataset.shuffle_seed")) {
                return null;
            }
            return new Dataset(train, eval, seed, onMalformed);
        }

        private List<Path> datasetFiles(String key) {
            String allowed = "a list of existing, readable JSONL files (a single path is a list of one)";
            List<String> names = r.strings(key, false, false, allowed);
            if (names == null) {
                return null;
            }
            List<Path> files = new ArrayList<>();
            boolean ok = true;
            for (String name : names) {
                try {
                    Path p = Path.of(name);
                    if (name.isBlank() || !Files.isRegularFile(p) || !Files.isReadable(p)) {
                        r.error(key, name, allowed);
                        ok = false;
                    } else {
                        files.add(p);
                    }
                } catch (InvalidPathException e) {
                    r.error(key, name, allowed);
                    ok = false;
                }
            }
            return ok ? files : null;
        }

        // ---- inference ----

        private List<ServerAddress> servers() {
            String key = "rollout.servers";
            List<String> texts = r.strings(
                    key,
                    false,
                    true,
                    "a list of host:port strings (or one comma-separated string), [] when the"
                            + " launcher supplies them");
            if (texts == null) {
                return null;
            }
            List<ServerAddress> out = new ArrayList<>();
            for (String t : texts) {
                try {
                    out.add(ServerAddress.parse(t));
                } catch (InvalidConfigException e) {
                    r.error(inferenceKeyed(e));
                }
            }
            return r.ok(key) ? out : null;
        }

        private InferenceConfig inference(List<ServerAddress> servers) {
            Map<String, Object> v = new LinkedHashMap<>();
            String backendAllowed =
                    "sglang or vllm, optionally with an allocation suffix such as sglang:d4 or vllm:d2t4";
            put(v, "backend", r.string("rollout.backend", false, backendAllowed));
            put(v, "request_timeout", r.seconds("rollout.request_timeout", false));
            put(
                    v,
                    "request_retries",
                    r.intValue(
                            "rollout.request_retries", Integer.MIN_VALUE, false, "an integer >= 1 (total attempts)"));
            put(v, "setup_timeout", r.seconds("rollout.setup_timeout", false));
            put(v, "routing_strategy", r.string("rollout.routing_strategy", false, "least_requests or round_robin"));
            put(v, "interrupt_mode", r.string("rollout.interrupt_mode", false, "resume or discard"));
            put(v, "sticky_by_rid", r.bool("rollout.sticky_by_rid"));
            put(v, "sticky_slack", r.intValue("rollout.sticky_slack", Integer.MIN_VALUE, false, "an integer >= 0"));
            for (String k : List.of(
                    "health_check_interval",
                    "health_check_timeout",
                    "control_timeout",
                    "retry_backoff_initial",
                    "retry_backoff_max",
                    "pause_grace_period")) {
                put(v, k, r.seconds("rollout." + k, false));
            }
            List<ServerAddress> addresses =
                    servers == null || servers.isEmpty() ? List.of(PLACEHOLDER_SERVER) : servers;
            return buildReporting(
                    v,
                    values -> buildInference(values, addresses),
                    k -> v.containsKey(k) ? k : null,
                    RolloutConfig::inferenceKeyed,
                    r);
        }

        /**
         * Range checks only: LargePayloads reads both keys from the actor system's configuration
         * (which LocalRun builds from these settings) and checks them against the frame size,
         * which is Pekko's and known only there.
         */
        private void largePayloads() {
            r.bytes(LargePayloads.THRESHOLD_KEY, 0, Integer.MAX_VALUE, LargePayloads.THRESHOLD_ALLOWED);
            r.bytes(
                    LargePayloads.CHUNK_KEY,
                    LargePayloads.MIN_CHUNK,
                    LargePayloads.MAX_CHUNK,
                    LargePayloads.CHUNK_ALLOWED);
        }

        /** {@code rollout.python.*}, read by {@link RolloutSettings#python()}. */
        private void python() {
            String executable = r.string("rollout.python.executable", false, "a non-blank interpreter name or path");
            if (executable != null && executable.isBlank()) {
                r.error("rollout.python.executable", executable, "a non-blank interpreter name or path");
            }
            r.string("rollout.python.path", false, "a PYTHONPATH string, \"\" for none");
            r.intValue("rollout.python.reward_workers", 1, true, "an integer >= 1, or null for min(4, cores)");
        }

        private static void put(Map<String, Object> m, String key, Object value) {
            if (value != null) {
                m.put(key, value);
            }
        }

        private void beamSearch(String section, GenerationConfig g, InferenceConfig inference) {
            if (g.useBeamSearch() && inference.backend() == Backend.SGLANG) {
                r.error(
                        section + ".use_beam_search",
                        true,
                        "false with rollout.backend = sglang (SGLang does not implement beam search)");
            }
        }

        // ---- gconfig, eval_gconfig ----

        private Map<GKey, Object> gconfigValues(String section, boolean onlyPresent) {
            Map<GKey, Object> values = new LinkedHashMap<>();
            for (GKey k : GKey.values()) {
                String path = section + "." + k.key;
                if (onlyPresent && !r.present(path)) {
                    continue;
                }
                Object v = k.read(r, path);
                if (v != GKey.ABSENT) {
                    values.put(k, v);
                }
            }
            return values;
        }

        private GenerationConfig gconfig() {
            gconfigRead = gconfigValues("gconfig", false);
            return buildReporting(gconfigRead, GKey::build, GKey::of, e -> e.under("gconfig"), r);
        }

        private GenerationConfig evalGconfig(InferenceConfig inference) {
            // gconfig's values that passed (an error there is reported once, under gconfig).
            Map<GKey, Object> inherited = new LinkedHashMap<>();
            gconfigRead.forEach((k, v) -> {
                if (r.ok("gconfig." + k.key)) {
                    inherited.put(k, v);
                }
            });
            Map<GKey, Object> given = gconfigValues("eval_gconfig", true);
            Map<GKey, Object> values = new LinkedHashMap<>(inherited);
            values.putAll(given);
            for (GKey k : GKey.values()) {
                if (!r.ok("eval_gconfig." + k.key)) {
                    values.remove(k);
                }
            }
            GenerationConfig g = buildReporting(
                    values,
                    GKey::build,
                    GKey::of,
                    e -> {
                        GKey k = GKey.of(e.key());
                        if (k != null && !given.containsKey(k)) {
                            return new InvalidConfigException(
                                    "eval_gconfig." + e.key(),
                                    e.value(),
                                    e.allowed() + "; the value is gconfig." + e.key() + "'s, as eval_gconfig does not"
                                            + " set it");
                        }
                        return e.under("eval_gconfig");
                    },
                    r);
            // Inherited beam search is reported once, under gconfig.
            if (g != null && inference != null && given.containsKey(GKey.USE_BEAM_SEARCH)) {
                beamSearch("eval_gconfig", g, inference);
            }
            for (GKey k : List.of(GKey.REWARD_NORMALIZATION, GKey.DROP_INCOMPLETE_GROUP)) {
                if (Boolean.TRUE.equals(given.get(k))) {
                    warnings.add("eval_gconfig." + k.key + " = true is ignored: evaluation groups must be complete"
                            + " and are never reward-normalised");
                }
            }
            if (given.containsKey(GKey.MIN_NEW_TOKENS) && (Integer) given.get(GKey.MIN_NEW_TOKENS) > 0) {
                warnings.add("eval_gconfig.min_new_tokens = " + given.get(GKey.MIN_NEW_TOKENS)
                        + " has no effect: it is not sent to SGLang or vLLM (as in AReaL)");
            }
            return g;
        }

        // ---- actor ----

        private Actor actor() {
            Long explicit = r.integer(
                    "actor.min_usable_group_size",
                    Integer.MIN_VALUE,
                    Integer.MAX_VALUE,
                    true,
                    "an integer in [1, gconfig.n_samples], or null to derive it");
            Norm rewardNorm = norm("actor.reward_norm");
            Norm advNorm = norm("actor.adv_norm");
            if (rewardNorm == null || advNorm == null || !r.ok("actor.min_usable_group_size")) {
                return null;
            }
            return new Actor(explicit == null ? null : explicit.intValue(), rewardNorm, advNorm);
        }

        private Norm norm(String section) {
            ConfigValue v = r.value(section);
            if (v == null || v.valueType() != ConfigValueType.OBJECT) {
                // null is AReaL's None; anything else was reported by the unknown-key walk.
                return v == null || v.valueType() == ConfigValueType.NULL ? Norm.NONE : null;
            }
            NormLevel mean = r.choice(section + ".mean_level", NORM_LEVELS, true, NORM_LEVEL);
            NormLevel std = r.choice(section + ".std_level", NORM_LEVELS, true, NORM_LEVEL);
            if (!r.ok(section + ".mean_level", section + ".std_level")) {
                return null;
            }
            return new Norm(mean, std);
        }

        private Integer minUsableGroupSize(GenerationConfig gconfig, Actor actor) {
            if (gconfig == null || actor == null || !r.ok("gconfig.n_samples", "gconfig.reward_normalization")) {
                return null;
            }
            if (gconfig.rewardNormalization() && actor.rewardNorm().isSet()) {
                r.error(
                        "gconfig.reward_normalization",
                        true,
                        "false while actor.reward_norm is set (mean_level="
                                + level(actor.rewardNorm().meanLevel())
                                + ", std_level=" + level(actor.rewardNorm().stdLevel()) + "): normalise rewards at"
                                + " rollout time or in the trainer, not both (AReaL: enable only one)");
                return null;
            }
            boolean groupStatistics = actor.rewardNorm().usesGroupStatistics()
                    || actor.advNorm().usesGroupStatistics()
                    || gconfig.rewardNormalization();
            try {
                return MinUsableGroupSize.resolve(actor.minUsableGroupSize(), gconfig.nSamples(), groupStatistics);
            } catch (InvalidConfigException e) {
                r.error(e.key().equals("n_samples") ? e.under("gconfig") : e.under("actor"));
                return null;
            }
        }

        private static String level(NormLevel l) {
            return l == null ? "null" : "\"" + l.configName() + "\"";
        }

        // ---- warnings ----

        private void warnings(
                Integer batch,
                Integer maxConcurrent,
                int c,
                Long eta,
                StalenessPolicy policy,
                Integer evalEvery,
                Dataset dataset,
                GenerationConfig gconfig,
                Actor actor) {
            if (maxConcurrent != null && batch != null && maxConcurrent < batch) {
                warnings.add("rollout.max_concurrent_rollouts = " + maxConcurrent
                        + " is below rollout.consumer_batch_size = " + batch + ": fewer groups run at once than a"
                        + " batch holds, so every batch takes several rounds of generation");
            }
            if (policy == StalenessPolicy.CANCEL && eta != null && eta == 0) {
                warnings.add("rollout.staleness_policy = cancel with rollout.max_head_offpolicyness = 0 cancels"
                        + " every group still running when a new weight version is published");
            }
            if (evalEvery != null
                    && evalEvery > 0
                    && dataset != null
                    && dataset.eval().isEmpty()) {
                warnings.add("rollout.eval_every = " + evalEvery + " has no effect: rollout.dataset.eval is empty");
            }
            if (gconfig == null) {
                return;
            }
            if (gconfig.minNewTokens() > 0) {
                warnings.add("gconfig.min_new_tokens = " + gconfig.minNewTokens()
                        + " has no effect: it is not sent to SGLang or vLLM (as in AReaL)");
            }
            if (gconfig.nSamples() > 1 && gconfig.seed() != null) {
                warnings.add("gconfig.seed = " + gconfig.seed() + " with gconfig.n_samples = " + gconfig.nSamples()
                        + ": every slot of a group sends the same seed, so a group's samples are alike and its"
                        + " group-relative advantages vanish");
            }
            if (gconfig.nSamples() > 1 && gconfig.greedy()) {
                warnings.add("gconfig.greedy = true with gconfig.n_samples = " + gconfig.nSamples()
                        + ": a group's samples are identical and its group-relative advantages vanish");
            }
            if (gconfig.nSamples() == 1 && gconfig.rewardNormalization()) {
                warnings.add("gconfig.reward_normalization = true has no effect with gconfig.n_samples = 1");
            }
            if (gconfig.dropIncompleteGroup() && actor != null && actor.minUsableGroupSize() != null) {
                warnings.add("actor.min_usable_group_size = " + actor.minUsableGroupSize() + " has no effect:"
                        + " gconfig.drop_incomplete_group = true drops every incomplete group");
            }
        }
    }
}
