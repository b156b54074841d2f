package org.rollout.workflows.python;

import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.rollout.api.RewardFunction;
import org.rollout.workflows.TimedRewardFunction;

/**
 * A reward function written in Python, named {@code python:module.path:function}: AReaL's {@code
 * fn(prompt, completions, prompt_ids, completion_ids, **data)} returning a number, run in the JVM's
 * {@link PythonRewardPool} of that module.
 *
 * <p>{@link #load} checks at once that the module imports and has the function, so a bad name is
 * refused when the workflow is built, not at the first sample. The workflows run it like any reward
 * ({@link TimedRewardFunction}: per-attempt timeout, retries, 0.0 after a final timeout, the last
 * exception fails the episode); an attempt that times out is interrupted, which kills its worker.
 * Thread-safe.
 */
public final class PythonRewardFunction implements RewardFunction {
    /** The prefix that marks a Python reward name. */
    public static final String PREFIX = "python:";

    private static final Pattern DOTTED = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*");
    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final PythonRewardPool pool;
    private final String function;

    private PythonRewardFunction(PythonRewardPool pool, String function) {
        this.pool = pool;
        this.function = function;
    }

    /** True when {@code name} starts with {@code python:}. */
    public static boolean isPythonName(String name) {
        return name != null && name.startsWith(PREFIX);
    }

    /**
     * The function {@code name} ({@code python:module.path:function}) in the shared pool for {@code
     * settings}, after checking that the module imports and has it (this starts the pool's first
     * worker).
     *
     * @throws IllegalArgumentException when {@code name} is not of that form
     * @throws PythonRewardException when the module does not import, the function is missing or not
     *     callable, or Python does not start (the message holds Python's error)
     * @throws InterruptedException when interrupted while the worker starts
     */
    public static PythonRewardFunction load(String name, PythonRewardPool.Settings settings)
            throws PythonRewardException, InterruptedException {
        Objects.requireNonNull(settings, "settings");
        String[] parts = parse(name);
        PythonRewardPool pool = PythonRewardPool.shared(settings, parts[0]);
        pool.check(parts[1]);
        return new PythonRewardFunction(pool, parts[1]);
    }

    /**
     * {@code [module, function]} of a {@code python:module.path:function} name, checking its form
     * only (nothing is imported).
     *
     * @throws IllegalArgumentException when {@code name} is not of that form
     */
    public static String[] parse(String name) {
        if (!isPythonName(name)) {
            throw new IllegalArgumentException("not a python reward name: " + name);
        }
        String rest = name.substring(PREFIX.length());
        int colon = rest.lastIndexOf(':');
        String module = colon < 0 ? "" : rest.substring(0, colon);
        String function = colon < 0 ? "" : rest.substring(colon + 1);
        if (!DOTTED.matcher(module).matches() || !IDENTIFIER.matcher(function).matches()) {
            throw new IllegalArgumentException(
                    "a python reward is named python:module.path:function (e.g. python:my_rewards.math:reward), got "
                            + name);
        }
        return new String[] {module, function};
    }

    /** The pool the calls go to. */
    public PythonRewardPool pool() {
        return pool;
    }

    /** The function's name in the module. */
    public String function() {
        return function;
    }

    /**
     * @throws PythonRewardException when the function raised (with the last line of its traceback),
     *     returned no finite number, or its worker died or broke the protocol
     * @throws InterruptedException when interrupted; the call's worker is killed
     */
    @Override
    public double reward(
            String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data)
            throws PythonRewardException, InterruptedException {
        return pool.call(function, prompt, completion, promptIds, completionIds, data);
    }

    @Override
    public String toString() {
        return PREFIX + pool.module() + ":" + function;
    }
}
