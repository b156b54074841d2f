package org.rollout.core;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.rollout.api.AcceptFilter;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RolloutWorkflow;
import org.rollout.config.AgentSection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns what a user configured as the workflow into the {@link RolloutWorkflow} each slot runs
 * (AReaL's {@code _resolve_workflow}, semantics §8), and the configured {@code should_accept_fn} into an
 * {@link AcceptFilter}.
 *
 * <pre>
 *   workflow                             result
 *   ─────────────────────────────────    ─────────────────────────────────────────────────────
 *   null                                 online mode: agentWrapping.wrap(null)       (rule 0)
 *   a RolloutWorkflow                    itself; workflow_kwargs ignored, with a warning  (1)
 *   a RolloutWorkflow class              new C(workflow_kwargs), or new C() when empty    (2)
 *   "pkg.Class" / "pkg.Class.FIELD"      the class or the public static field's value,
 *     / "pkg.Class#FIELD"                  then as rules 1, 2, 4, 5                        (3)
 *   an AgentWorkflow class               agentWrapping.wrap(new C(kwargs or {}))          (4)
 *   an AgentWorkflow                     agentWrapping.wrap(it); kwargs ignored           (5)
 *   anything else                        IllegalArgumentException naming its type          (6)
 * </pre>
 *
 * <p>Differences from AReaL, because Java is typed: an agent is an {@link AgentWorkflow} (AReaL
 * accepts any object or class with an async {@code run} method, and treats every other class or
 * object as one); a class or object that is neither a {@code RolloutWorkflow} nor an {@code
 * AgentWorkflow} is refused here rather than failing later. A workflow class is built by its
 * public {@code (Map<String, Object>)} constructor, which receives an unmodifiable copy of the
 * kwargs, or by its public no-arg constructor when the kwargs are empty; Python passes the kwargs
 * as keyword arguments instead. Import strings name a class (nested classes with {@code $} or
 * {@code .}) or a class's public static field, resolved through the thread's context class
 * loader. Group wrapping and group-size validation are not done here: slots are grouped by the
 * runtime.
 *
 * <p>A class or string is instantiated anew by every {@link #resolve} call, as AReaL does on
 * every submit. Immutable and thread-safe; all errors are {@link IllegalArgumentException}s whose
 * message names what was given and what is accepted.
 */
public final class WorkflowResolver {
    public static final String MODE_INLINE = "inline";
    public static final String MODE_SUBPROC = "subproc";
    public static final String MODE_ONLINE = "online";
    /** The values of {@code rollout.agent.mode}. */
    public static final Set<String> AGENT_MODES = AgentSection.MODES;

    private static final Logger LOG = LoggerFactory.getLogger(WorkflowResolver.class);
    private static final String ACCEPTED = "a RolloutWorkflow (instance or class), an AgentWorkflow (instance or"
            + " class), a string naming one ('pkg.Class', 'pkg.Class.FIELD' or 'pkg.Class#FIELD'), or null for"
            + " online mode";
    private static final String NO_PROXY = "no OpenAI proxy is running on this node (no proxy address);"
            + " configure the agent proxy (rollout.agent) so it starts with the node";

    private final String agentMode;
    private final AgentWrapping agentWrapping;

    /**
     * @param agentMode {@code rollout.agent.mode}: {@code inline}, {@code subproc} or {@code online}
     * @param agentWrapping wraps agents behind the node's OpenAI proxy; null when there is no proxy
     * @throws InvalidConfigException for key {@code rollout.agent.mode} when the mode is not one of
     *     those three
     */
    public WorkflowResolver(String agentMode, AgentWrapping agentWrapping) {
        if (agentMode == null || !AGENT_MODES.contains(agentMode)) {
            throw new InvalidConfigException("rollout.agent.mode", agentMode, "inline, subproc or online");
        }
        this.agentMode = agentMode;
        this.agentWrapping = agentWrapping;
    }

    /**
     * The workflow for {@code workflow} and {@code kwargs} by the rules above.
     *
     * @param workflow what the user configured (see the table above)
     * @param kwargs AReaL's {@code workflow_kwargs}; may be null, which a workflow class refuses
     * @throws IllegalArgumentException naming the input and what is accepted when no rule applies,
     *     a rule's requirement is not met, or constructing the workflow fails
     */
    public ResolvedWorkflow resolve(Object workflow, Map<String, Object> kwargs) {
        if (workflow == null) {
            return online();
        }
        if (workflow instanceof String spec) {
            Object target = importFromString(spec, "workflow");
            ResolvedWorkflow r = resolveTarget(target, kwargs, spec);
            return new ResolvedWorkflow(r.workflow(), "'" + spec + "' → " + r.description());
        }
        return resolveTarget(workflow, kwargs, null);
    }

    private ResolvedWorkflow online() {
        if (!MODE_ONLINE.equals(agentMode)) {
            throw new IllegalArgumentException("workflow is null, which means online mode, but rollout.agent.mode"
                    + " is '" + agentMode + "', not 'online': pass a workflow, or set rollout.agent.mode = online");
        }
        if (agentWrapping == null) {
            throw new IllegalArgumentException("online mode (workflow null) needs the OpenAI proxy, but " + NO_PROXY);
        }
        return new ResolvedWorkflow(wrap(null, "online mode"), "online mode: OpenAI proxy sessions with no agent");
    }

    /** Rules 1, 2, 4, 5 and 6 for a value given directly ({@code fromString} null) or imported. */
    private ResolvedWorkflow resolveTarget(Object target, Map<String, Object> kwargs, String fromString) {
        if (target instanceof RolloutWorkflow w) {
            warnIgnored(kwargs, target.getClass());
            return new ResolvedWorkflow(
                    w, "RolloutWorkflow instance of " + target.getClass().getName());
        }
        if (target instanceof Class<?> c && RolloutWorkflow.class.isAssignableFrom(c)) {
            if (kwargs == null) {
                throw new IllegalArgumentException("workflow_kwargs must be given to instantiate workflow class "
                        + c.getName() + " (an empty map is fine), got null");
            }
            Constructed<?> made = construct(c, kwargs, "workflow class");
            return new ResolvedWorkflow((RolloutWorkflow) made.instance(), "RolloutWorkflow " + made.description());
        }
        if (target instanceof Class<?> c && AgentWorkflow.class.isAssignableFrom(c)) {
            requireProxy("workflow " + c.getName() + " is an AgentWorkflow class");
            Constructed<?> made = construct(c, kwargs == null ? Map.of() : kwargs, "agent workflow class");
            AgentWorkflow agent = (AgentWorkflow) made.instance();
            return new ResolvedWorkflow(
                    wrap(agent, c.getName()), "AgentWorkflow " + made.description() + ", behind the OpenAI proxy");
        }
        if (target instanceof AgentWorkflow agent) {
            requireProxy("workflow " + target.getClass().getName() + " is an AgentWorkflow");
            warnIgnored(kwargs, target.getClass());
            return new ResolvedWorkflow(
                    wrap(agent, target.getClass().getName()),
                    "AgentWorkflow instance of " + target.getClass().getName() + ", behind the OpenAI proxy");
        }
        String what = target instanceof Class<?> c
                ? "class " + c.getName() + ", which implements neither RolloutWorkflow nor AgentWorkflow"
                : "an instance of " + target.getClass().getName();
        if (fromString != null) {
            String why = target instanceof Class<?> ? "" : ", which is not a workflow";
            throw new IllegalArgumentException(
                    "workflow string '" + fromString + "' resolved to " + what + why + "; accepted: " + ACCEPTED);
        }
        throw new IllegalArgumentException("unsupported workflow: " + what + "; accepted: " + ACCEPTED);
    }

    private void requireProxy(String what) {
        if (agentWrapping == null) {
            throw new IllegalArgumentException(
                    what + ", which runs behind an OpenAI-compatible proxy, but " + NO_PROXY);
        }
    }

    private RolloutWorkflow wrap(AgentWorkflow agent, String what) {
        RolloutWorkflow w = agentWrapping.wrap(agent);
        if (w == null) {
            throw new IllegalStateException("the agent wrapping returned no workflow for " + what);
        }
        return w;
    }

    private static void warnIgnored(Map<String, Object> kwargs, Class<?> type) {
        if (kwargs != null && !kwargs.isEmpty()) {
            LOG.warn(
                    "workflow_kwargs {} ignored: the workflow is already an instance of {}",
                    kwargs.keySet(),
                    type.getName());
        }
    }

    private record Constructed<T>(T instance, String description) {}

    /**
     * {@code new C(kwargs)} by the public {@code (Map)} constructor, or {@code new C()} when the
     * kwargs are empty and there is a public no-arg one.
     */
    private static Constructed<?> construct(Class<?> c, Map<String, Object> kwargs, String kind) {
        if (c.isInterface() || Modifier.isAbstract(c.getModifiers())) {
            throw new IllegalArgumentException("cannot instantiate " + kind + " " + c.getName() + ": it is "
                    + (c.isInterface() ? "an interface" : "abstract"));
        }
        Constructor<?> withMap = publicConstructor(c, Map.class);
        if (withMap != null) {
            Map<String, Object> copy = Collections.unmodifiableMap(new LinkedHashMap<>(kwargs));
            return new Constructed<>(
                    newInstance(withMap, kind, copy),
                    "class " + c.getName() + " constructed with workflow_kwargs " + kwargs.keySet());
        }
        String simple = c.getSimpleName();
        if (!kwargs.isEmpty()) {
            throw new IllegalArgumentException("cannot instantiate " + kind + " " + c.getName()
                    + " with workflow_kwargs "
                    + kwargs.keySet() + ": it has no public constructor " + simple + "(Map<String, Object>)"
                    + " (a public no-arg constructor " + simple + "() is used only when workflow_kwargs is empty)");
        }
        Constructor<?> noArg = publicConstructor(c);
        if (noArg == null) {
            throw new IllegalArgumentException("cannot instantiate " + kind + " " + c.getName() + ": it has neither a"
                    + " public constructor " + simple + "(Map<String, Object>) nor a public no-arg constructor "
                    + simple + "()");
        }
        return new Constructed<>(newInstance(noArg, kind), "class " + c.getName() + " constructed with no arguments");
    }

    private static Constructor<?> publicConstructor(Class<?> c, Class<?>... parameterTypes) {
        try {
            return c.getConstructor(parameterTypes);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    private static Object newInstance(Constructor<?> ctor, String kind, Object... args) {
        String name = ctor.getDeclaringClass().getName();
        try {
            return ctor.newInstance(args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw new IllegalArgumentException("constructing " + kind + " " + name + " failed: " + cause, cause);
        } catch (IllegalAccessException e) {
            throw new IllegalArgumentException(
                    "cannot instantiate " + kind + " " + name + ": the class is not public (" + e.getMessage() + ")",
                    e);
        } catch (InstantiationException | ExceptionInInitializerError e) {
            throw new IllegalArgumentException("cannot instantiate " + kind + " " + name + ": " + e, e);
        }
    }

    /**
     * The {@code should_accept_fn} filter (semantics §8): null accepts everything; an {@link AcceptFilter} is
     * used as is; a string names an {@code AcceptFilter} class (built by its public no-arg
     * constructor) or a public static field holding one.
     *
     * @throws IllegalArgumentException when the string cannot be imported (naming it), when what it
     *     names is not an {@code AcceptFilter} (AReaL's TypeError, naming its class), or for any
     *     other type of {@code spec}
     */
    public static AcceptFilter resolveAcceptFilter(Object spec) {
        if (spec == null) {
            return AcceptFilter.all();
        }
        if (spec instanceof AcceptFilter f) {
            return f;
        }
        if (spec instanceof String s) {
            Object target = importFromString(s, "should_accept_fn");
            if (target instanceof AcceptFilter f) {
                return f;
            }
            if (target instanceof Class<?> c && AcceptFilter.class.isAssignableFrom(c)) {
                if (c.isInterface() || Modifier.isAbstract(c.getModifiers())) {
                    throw new IllegalArgumentException("cannot instantiate should_accept_fn class " + c.getName()
                            + ": it is " + (c.isInterface() ? "an interface" : "abstract"));
                }
                Constructor<?> noArg = publicConstructor(c);
                if (noArg == null) {
                    throw new IllegalArgumentException("cannot instantiate should_accept_fn class " + c.getName()
                            + ": it has no public no-arg constructor " + c.getSimpleName() + "()");
                }
                return (AcceptFilter) newInstance(noArg, "should_accept_fn class");
            }
            String what = target instanceof Class<?> c
                    ? "class " + c.getName()
                    : "an instance of " + target.getClass().getName();
            throw new IllegalArgumentException(
                    "should_accept_fn '" + s + "' resolved to " + what + ", which is not an AcceptFilter");
        }
        throw new IllegalArgumentException("should_accept_fn must be null, an AcceptFilter, or a string naming an"
                + " AcceptFilter class or static field ('pkg.Class', 'pkg.Class.FIELD' or 'pkg.Class#FIELD'), got "
                + spec.getClass().getName());
    }

    /**
     * Python's {@code import_from_string} for Java: a class by its name, or the value of a public
     * static field named {@code pkg.Class.FIELD} or {@code pkg.Class#FIELD}.
     */
    private static Object importFromString(String spec, String what) {
        String prefix = "Failed to import " + what + " from string '" + spec + "': ";
        if (spec.isBlank()) {
            throw new IllegalArgumentException(prefix + "the string is empty");
        }
        int hash = spec.indexOf('#');
        if (hash >= 0) {
            String className = spec.substring(0, hash);
            Class<?> owner = loadClass(className, prefix);
            if (owner == null) {
                throw new IllegalArgumentException(prefix + "no class '" + className + "'");
            }
            return staticField(owner, spec.substring(hash + 1), prefix);
        }
        Class<?> c = loadClass(spec, prefix);
        if (c != null) {
            return c;
        }
        int dot = spec.lastIndexOf('.');
        if (dot <= 0 || dot == spec.length() - 1) {
            throw new IllegalArgumentException(prefix + "no class '" + spec + "'");
        }
        String ownerName = spec.substring(0, dot);
        Class<?> owner = loadClass(ownerName, prefix);
        if (owner == null) {
            throw new IllegalArgumentException(prefix + "no class '" + spec + "', and no class '" + ownerName
                    + "' to hold a field '" + spec.substring(dot + 1) + "'");
        }
        return staticField(owner, spec.substring(dot + 1), prefix);
    }

    /** The class named {@code name}, also when nested classes are written with dots; null when there is none. */
    private static Class<?> loadClass(String name, String errorPrefix) {
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        if (loader == null) {
            loader = WorkflowResolver.class.getClassLoader();
        }
        String candidate = name;
        while (true) {
            try {
                return Class.forName(candidate, true, loader);
            } catch (ClassNotFoundException e) {
                int dot = candidate.lastIndexOf('.');
                if (dot <= 0) {
                    return null;
                }
                // "pkg.Outer.Inner" is the nested class "pkg.Outer$Inner".
                candidate = candidate.substring(0, dot) + "$" + candidate.substring(dot + 1);
            } catch (LinkageError e) {
                throw new IllegalArgumentException(errorPrefix + "loading class '" + candidate + "' failed: " + e, e);
            }
        }
    }

    private static Object staticField(Class<?> owner, String fieldName, String errorPrefix) {
        Field field;
        try {
            field = owner.getField(fieldName);
        } catch (NoSuchFieldException e) {
            throw new IllegalArgumentException(
                    errorPrefix + "class " + owner.getName() + " has no public static field '" + fieldName + "'");
        }
        if (!Modifier.isStatic(field.getModifiers())) {
            throw new IllegalArgumentException(
                    errorPrefix + "field " + owner.getName() + "." + fieldName + " is not static");
        }
        Object value;
        try {
            value = field.get(null);
        } catch (IllegalAccessException e) {
            throw new IllegalArgumentException(
                    errorPrefix + "field " + owner.getName() + "." + fieldName + " is not accessible: "
                            + e.getMessage(),
                    e);
        }
        if (value == null) {
            throw new IllegalArgumentException(errorPrefix + "field " + owner.getName() + "." + fieldName + " is null");
        }
        return value;
    }

    @Override
    public String toString() {
        return "WorkflowResolver{rollout.agent.mode=" + agentMode + ", proxy=" + (agentWrapping != null) + "}";
    }
}
