package org.rollout.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValue;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
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
 *   (KnownKeys)     every problem collected; one InvalidConfigException, or ConfigErrors for several
 * </pre>
 *
 * <p><b>Sections.</b> Each part of the tree is read and validated by its own class, in
 * reference.conf order, through one {@link ConfigReader}: {@code DumpSection} (experiment and trial
 * names, fileroot, dump_to_file), {@code ControllerSection} (the other controller keys of {@code
 * rollout}), {@code DatasetSection} ({@code rollout.dataset}), {@code InferenceSection} (servers,
 * backend and the generation loop's keys, as an {@link InferenceConfig}), {@link LargePayloadLimits}
 * (the cluster's payload keys), {@code GenerationSection} ({@code gconfig}, {@code eval_gconfig})
 * and {@code ActorSection} ({@code actor}). This class composes them and checks what spans
 * sections (beam search with the backend, reward normalisation with {@code actor.reward_norm}, the
 * usable minimum with {@code n_samples}). {@link AgentSection} and {@link AgentLaunch} read {@code
 * rollout.agent}: checked here, read again by a launcher that runs an agent ({@link
 * RolloutSettings#agent()}, {@link RolloutSettings#agentLaunch()}).
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
                over = Overrides.parseOverride(o).withFallback(over);
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
        RolloutSettings settings = read(r, merged);
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
                        + "': the config module's resources are missing");
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

    /**
     * One load's reading of the merged tree: each section reads and validates its own keys, in
     * reference.conf order; then the combinations across sections and the warnings. Null when
     * anything failed (every error is in {@code r}).
     */
    private static RolloutSettings read(ConfigReader r, Config merged) {
        List<String> warnings = new ArrayList<>();
        DumpSection dump = DumpSection.read(r);
        ControllerSection controller = ControllerSection.read(r);
        RolloutSettings.Dataset dataset = DatasetSection.read(r);
        List<ServerAddress> servers = InferenceSection.servers(r);
        InferenceConfig inference = InferenceSection.template(r, servers);
        LargePayloadLimits.check(r);
        PythonSection.check(r);
        MetricsSection.check(r);
        FailureBreakerSection.check(r);
        ServerFileSection.check(r);
        LaunchSection.check(r);
        checkAgent(r, merged);
        GenerationSection generation = new GenerationSection(r, warnings);
        GenerationConfig gconfig = generation.gconfig();
        GenerationConfig evalGconfig = generation.evalGconfig(inference);
        RolloutSettings.Actor actor = ActorSection.read(r);

        // ---- combinations ----
        dump.checkCombinations(r);
        Integer minUsable = ActorSection.minUsableGroupSize(r, gconfig, actor);
        if (gconfig != null && inference != null) {
            InferenceSection.checkBeamSearch(r, "gconfig", gconfig, inference);
        }
        controller.warnings(dataset, warnings);
        generation.warnings(gconfig, actor, inference != null && inference.deterministicSampling());

        if (!r.errors().isEmpty()) {
            return null;
        }
        return new RolloutSettings(
                controller.toRollout(dump, dataset),
                gconfig,
                evalGconfig,
                actor,
                minUsable,
                servers,
                inference,
                warnings,
                merged);
    }

    /** {@code rollout.agent}: both of its readers, so that a bad value stops the load, naming its key. */
    private static void checkAgent(ConfigReader r, Config merged) {
        try {
            AgentSection.read(merged);
        } catch (InvalidConfigException e) {
            r.error(e);
        }
        try {
            AgentLaunch.read(merged);
        } catch (InvalidConfigException e) {
            r.error(e);
        }
    }
}
