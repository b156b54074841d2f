package org.rollout.workflows;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RewardFunction;
import org.rollout.api.Tokenizer;
import org.rollout.core.Tokenizers;
import org.rollout.workflows.python.PythonRewardException;
import org.rollout.workflows.python.PythonRewardFunction;
import org.rollout.workflows.python.PythonRewardPool;

/**
 * Reads a workflow's {@code workflow_kwargs} (the map the runtime's resolver hands to a {@code
 * (Map<String, Object>)} constructor, semantics §8): typed values by key, every wrong value an {@link
 * InvalidConfigException} naming the key, an unknown key refused (as Python refuses an unexpected
 * keyword argument). Immutable.
 */
final class WorkflowKwargs {
    private final String workflow;
    private final Map<String, Object> values;

    /**
     * @param workflow the workflow's name, for messages
     * @param known the keys the workflow accepts
     * @throws InvalidConfigException naming the first unknown key and listing the known ones
     */
    WorkflowKwargs(String workflow, Map<String, Object> values, Set<String> known) {
        this.workflow = workflow;
        this.values = Objects.requireNonNull(values, "workflow_kwargs");
        for (String key : values.keySet()) {
            if (!known.contains(key)) {
                throw new InvalidConfigException(
                        key, values.get(key), "not a " + workflow + " kwarg; known: " + new TreeSet<>(known));
            }
        }
    }

    /** A {@link GenerationConfig} object under {@code key}; required. */
    GenerationConfig gconfig(String key) {
        Object v = values.get(key);
        if (v instanceof GenerationConfig g) {
            return g;
        }
        throw new InvalidConfigException(key, v, "a GenerationConfig object (required by " + workflow + ")");
    }

    /**
     * A {@link Tokenizer} under {@code key}: the object itself, or a string for {@link
     * Tokenizers#load} (a Hugging Face tokenizer directory, or "builtin"); required.
     */
    Tokenizer tokenizer(String key) {
        Object v = values.get(key);
        if (v instanceof Tokenizer t) {
            return t;
        }
        if (v instanceof String path) {
            try {
                return Tokenizers.load(path);
            } catch (InvalidConfigException e) {
                // Re-keyed: here the path is this kwarg, not rollout.tokenizer_path.
                InvalidConfigException keyed = new InvalidConfigException(key, path, e.allowed());
                keyed.initCause(e);
                throw keyed;
            }
        }
        throw new InvalidConfigException(
                key,
                v,
                "a Tokenizer object, or a tokenizer path (a Hugging Face tokenizer directory, or \"builtin\")"
                        + " (required by " + workflow + ")");
    }

    /**
     * A {@link RewardFunction} under {@code key}: an instance, or a string naming a class that
     * implements it (built by its public no-arg constructor), a public static field holding one
     * ({@code pkg.Class#FIELD}), or a Python function ({@code python:module.path:function}, run in
     * the {@link PythonRewardPool} of the {@link PythonRewardPool#configured() configured} settings:
     * the module is imported and the function checked now); required.
     */
    RewardFunction rewardFunction(String key) {
        Object v = values.get(key);
        if (v instanceof RewardFunction f) {
            return f;
        }
        if (v instanceof String name && PythonRewardFunction.isPythonName(name)) {
            return loadPythonReward(key, name);
        }
        if (v instanceof String name && !name.isBlank()) {
            return loadRewardFunction(key, name);
        }
        throw new InvalidConfigException(key, v, REWARD_FN_ALLOWED + " (required by " + workflow + ")");
    }

    /**
     * The kwargs every built-in workflow with a reward takes (the configuration's gconfig and
     * tokenizer, the reward and its limits), with the workflow's own {@code more}.
     */
    static Set<String> rewardWorkflowKwargs(String... more) {
        Set<String> keys =
                new HashSet<>(Set.of("gconfig", "tokenizer", "reward_fn", "reward_timeout", "reward_max_retries"));
        keys.addAll(List.of(more));
        return Set.copyOf(keys);
    }

    /**
     * The reward under {@code key} ({@link #rewardFunction}) with its per-attempt limits: {@code
     * reward_timeout} (seconds &gt; 0, default {@link TimedRewardFunction#DEFAULT_TIMEOUT}) and {@code
     * reward_max_retries} (retries after a failed or timed-out attempt, integer &ge; 0, default
     * {@link TimedRewardFunction#DEFAULT_MAX_RETRIES}). A {@link TimedRewardFunction} given as the
     * reward keeps its own limits, and then these kwargs are refused.
     */
    TimedRewardFunction timedReward(String key) {
        RewardFunction f = rewardFunction(key);
        Object timeout = values.get("reward_timeout");
        Object retries = values.get("reward_max_retries");
        if (f instanceof TimedRewardFunction timed) {
            if (timeout != null || retries != null) {
                String given = timeout != null ? "reward_timeout" : "reward_max_retries";
                throw new InvalidConfigException(
                        given,
                        values.get(given),
                        "absent: the reward_fn given is a TimedRewardFunction with its own limits");
            }
            return timed;
        }
        Duration limit = TimedRewardFunction.DEFAULT_TIMEOUT;
        if (timeout != null) {
            if (!(timeout instanceof Number n) || !(n.doubleValue() > 0) || Double.isInfinite(n.doubleValue())) {
                throw new InvalidConfigException(
                        "reward_timeout", timeout, "seconds > 0 for one attempt of the reward");
            }
            limit = Duration.ofNanos(Math.max(1, Math.round(n.doubleValue() * 1e9)));
        }
        int maxRetries = TimedRewardFunction.DEFAULT_MAX_RETRIES;
        if (retries != null) {
            if (!(retries instanceof Number n && isIntegral(n) && n.longValue() >= 0 && n.longValue() <= 1000)) {
                throw new InvalidConfigException(
                        "reward_max_retries", retries, "an integer in [0, 1000]: retries after a failed attempt");
            }
            maxRetries = ((Number) retries).intValue();
        }
        return new TimedRewardFunction(f, limit, maxRetries);
    }

    private static final String REWARD_FN_ALLOWED = "a RewardFunction object, the name of a class implementing"
            + " RewardFunction with a public no-arg constructor, 'pkg.Class#FIELD' naming a public static"
            + " RewardFunction field, or 'python:module.path:function' naming a Python function";

    private static RewardFunction loadPythonReward(String key, String name) {
        PythonRewardPool.Settings settings = PythonRewardPool.configured();
        try {
            PythonRewardFunction.parse(name);
        } catch (IllegalArgumentException e) {
            throw new InvalidConfigException(key, name, REWARD_FN_ALLOWED + "; " + e.getMessage());
        }
        try {
            return PythonRewardFunction.load(name, settings);
        } catch (PythonRewardException e) {
            InvalidConfigException refused = new InvalidConfigException(
                    key,
                    name,
                    "a Python function that " + settings.executable() + " can import"
                            + (settings.path().isEmpty() ? "" : " with PYTHONPATH " + settings.path()) + "; "
                            + e.getMessage());
            refused.initCause(e);
            throw refused;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while loading reward_fn " + name, e);
        }
    }

    private static RewardFunction loadRewardFunction(String key, String name) {
        int hash = name.indexOf('#');
        String className = hash < 0 ? name : name.substring(0, hash);
        Class<?> c;
        try {
            c = Class.forName(className, true, classLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new InvalidConfigException(key, name, REWARD_FN_ALLOWED + "; class " + className + " not found");
        }
        Object value;
        try {
            if (hash >= 0) {
                Field f = c.getField(name.substring(hash + 1));
                if (!Modifier.isStatic(f.getModifiers())) {
                    throw new InvalidConfigException(key, name, REWARD_FN_ALLOWED + "; the field is not static");
                }
                value = f.get(null);
            } else {
                Constructor<?> ctor = c.getConstructor();
                value = ctor.newInstance();
            }
        } catch (NoSuchFieldException e) {
            throw new InvalidConfigException(
                    key, name, REWARD_FN_ALLOWED + "; " + className + " has no public field " + e.getMessage());
        } catch (NoSuchMethodException e) {
            throw new InvalidConfigException(
                    key, name, REWARD_FN_ALLOWED + "; " + className + " has no public no-arg constructor");
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException(
                    "reward_fn " + name + ": its constructor threw " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new InvalidConfigException(key, name, REWARD_FN_ALLOWED + "; " + e);
        }
        if (value instanceof RewardFunction f) {
            return f;
        }
        throw new InvalidConfigException(
                key,
                name,
                REWARD_FN_ALLOWED + "; it gives a "
                        + (value == null ? "null" : value.getClass().getName()));
    }

    private static ClassLoader classLoader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : WorkflowKwargs.class.getClassLoader();
    }

    /** A boolean under {@code key}, or {@code fallback} when absent. */
    boolean bool(String key, boolean fallback) {
        Object v = values.get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        throw new InvalidConfigException(key, v, "true or false");
    }

    /** A non-empty string under {@code key}, or {@code fallback} when absent. */
    String string(String key, String fallback) {
        Object v = values.get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof String s && !s.isEmpty()) {
            return s;
        }
        throw new InvalidConfigException(key, v, "a non-empty string");
    }

    /** An integer under {@code key}; required. Integral numbers of any boxed type are accepted. */
    int integer(String key, String allowed) {
        Object v = values.get(key);
        if (v instanceof Number n && isIntegral(n) && n.longValue() == n.intValue()) {
            return n.intValue();
        }
        throw new InvalidConfigException(key, v, allowed + " (required by " + workflow + ")");
    }

    /** A number under {@code key}; required. */
    double number(String key, String allowed) {
        Object v = values.get(key);
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw new InvalidConfigException(key, v, allowed + " (required by " + workflow + ")");
    }

    private static boolean isIntegral(Number n) {
        return n instanceof Integer
                || n instanceof Long
                || n instanceof Short
                || n instanceof Byte
                || (n instanceof Double d && d == Math.rint(d) && !d.isInfinite())
                || (n instanceof Float f && f == Math.rint(f) && !f.isInfinite());
    }
}
