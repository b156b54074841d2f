package org.rollout.cli;

import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import org.rollout.agent.AgentOptions;
import org.rollout.agent.AgentWorkflows;
import org.rollout.agent.OnlineAgentWorkflow;
import org.rollout.agent.OpenAIProxy;
import org.rollout.agent.ProcessAgentWorkflow;
import org.rollout.agent.ProxyAgentWorkflow;
import org.rollout.agent.ProxyConfig;
import org.rollout.api.AcceptFilter;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.Tokenizer;
import org.rollout.cluster.GeneratedPromptSource;
import org.rollout.cluster.JsonlPromptSource;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.NodeServices;
import org.rollout.cluster.PromptSource;
import org.rollout.cluster.RemoteEngines;
import org.rollout.config.AgentLaunch;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutSettings;
import org.rollout.core.AcceptFilters;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.core.Tokenizers;
import org.rollout.core.TrajectoryDumper;
import org.rollout.core.TrajectoryFormatChecker;
import org.rollout.core.WorkflowResolver;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.python.PythonAgent;
import org.rollout.python.PythonWorkflow;
import org.rollout.python.PythonWorkflowPool;
import org.rollout.workflows.BuiltinWorkflows;
import org.rollout.workflows.demo.LetterTask;
import org.rollout.workflows.python.PythonRewardPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one engine node is made of, from validated settings and its inference engine: the
 * workflows (built-in or class-named; or, behind the node's OpenAI-compatible proxy, the agent of
 * {@code rollout.agent.command}, online episodes, an AgentWorkflow class, or the demo agent), the
 * node's services, the prompt source and evaluation items. {@code rollout local} and {@code
 * rollout node} both build their engine with it, so a node of a cluster runs exactly what a local
 * run does. What it starts (the agent proxy, the executor) is added to {@code toClose}.
 *
 * <p>The letters task's prompts, its evaluation items and the byte-level tokenizer for an empty
 * {@code rollout.tokenizer_path} are the demo's, used only when the demo was asked for ({@code
 * --demo}, {@code --workflow demo|agent}, or {@code rollout.workflow = demo}). Any other run must
 * configure them: {@link #check} refuses it otherwise, naming the key, before anything starts.
 * Classes named in the configuration are loaded through the thread's context class loader (the
 * user's class path, {@link UserClassPath}); a class that is missing, of the wrong type, or whose
 * kwargs do not bind is refused naming the key ({@code rollout.workflow}, {@code
 * rollout.workflow_kwargs.<kwarg>}, {@code rollout.accept}).
 */
final class NodeAssembly {
    private static final Logger log = LoggerFactory.getLogger(NodeAssembly.class);
    static final int DEMO_EVAL_EVERY = LocalRun.DEMO_EVAL_EVERY;
    static final String LETTER_AGENT = LocalRun.LETTER_AGENT;

    private final RolloutSettings settings;
    private final boolean demo;
    private final boolean agent;
    private final List<AutoCloseable> toClose;
    private Tokenizer tokenizer;
    private Workflows built;
    // In an agent mode, the evaluation workflow rollout.eval_workflow names (null: the agent evaluates).
    private RolloutWorkflow agentEval;
    private AcceptFilter accept;
    private AgentKind agentKind = AgentKind.NONE;
    // The workers of rollout.workflow when it names a Python class, started when its kind is asked.
    private PythonWorkflowPool pythonPool;
    private String onlineProxyUrl;
    private TrajectoryDumper dumper;

    /**
     * @param demo the letters demo was asked for: its prompts, evaluation items and tokenizer
     *     fallback may be used
     * @param agent the demo agent behind the OpenAI-compatible proxy ({@code rollout local
     *     --workflow agent}) instead of {@code rollout.workflow}
     */
    NodeAssembly(RolloutSettings settings, boolean demo, boolean agent, List<AutoCloseable> toClose) {
        this.settings = settings;
        this.demo = demo || agent;
        this.agent = agent;
        this.toClose = toClose;
    }

    /** What runs behind the node's agent proxy, when anything does. */
    private enum AgentKind {
        /** No agent: a RolloutWorkflow runs without the proxy. */
        NONE,
        /** The demo's letters agent ({@code --workflow agent}, or {@code rollout.workflow = agent} in the demo). */
        DEMO,
        /** The program of {@code rollout.agent.command}, one process per episode. */
        COMMAND,
        /** {@code rollout.agent.mode = online}: episodes that external clients claim. */
        ONLINE,
        /** {@code rollout.workflow} names an AgentWorkflow class. */
        CLASS,
        /** {@code rollout.workflow = "python:module:Class"} names a Python agent ({@code async run(data, **kw)}). */
        PYTHON
    }

    private AgentKind agentKind() {
        if (agent) {
            return AgentKind.DEMO;
        }
        String name = settings.workflow();
        if (name.equals("agent")) {
            if (settings.agentLaunch().hasCommand()) {
                return AgentKind.COMMAND;
            }
            if (settings.agent().mode().equals(WorkflowResolver.MODE_ONLINE)) {
                return AgentKind.ONLINE;
            }
            if (demo) {
                return AgentKind.DEMO;
            }
            throw new InvalidConfigException(
                    "rollout.agent.command",
                    List.of(),
                    "an agent program, e.g. [\"python3\", \"agent.py\"], while rollout.workflow = \"agent\"; or"
                            + " rollout.agent.mode = \"online\" for external clients (docs/agents.md)");
        }
        if (BuiltinWorkflows.isBuiltin(name)) {
            return AgentKind.NONE;
        }
        if (name.startsWith(PythonPools.PREFIX)) {
            // The first worker says which kind the class is; a class that cannot load is refused here.
            pythonPool = pythonPool(name, settings.workflowKwargs(), settings.gconfig(), tokenizer, WORKFLOW);
            return pythonPool.kind().equals("agent") ? AgentKind.PYTHON : AgentKind.NONE;
        }
        try {
            Class<?> c = Class.forName(name, false, Thread.currentThread().getContextClassLoader());
            return AgentWorkflow.class.isAssignableFrom(c) ? AgentKind.CLASS : AgentKind.NONE;
        } catch (ClassNotFoundException | LinkageError e) {
            return AgentKind.NONE; // refused, naming the key, when the workflow is built
        }
    }

    /** True when {@code settings} name the demo workflow ({@code rollout.workflow = demo}). */
    static boolean isDemoWorkflow(RolloutSettings settings) {
        return settings.workflow().equals("demo");
    }

    /**
     * Refuses a run that is not the demo but lacks what only the demo supplies: training prompts
     * ({@code rollout.dataset.train}), an evaluation set while {@code rollout.eval_every} is above
     * 0 ({@code rollout.dataset.eval}), a tokenizer ({@code rollout.tokenizer_path}).
     *
     * @throws InvalidConfigException or {@link ConfigErrors} naming each key at fault
     */
    static void check(RolloutSettings settings, boolean demo) {
        if (demo) {
            return;
        }
        String why = " (rollout.workflow = \"" + settings.workflow()
                + "\" is configured; the letters task's fallbacks are the demo's: --demo)";
        List<InvalidConfigException> errors = new ArrayList<>();
        RolloutSettings.Dataset d = settings.dataset();
        if (d.train().isEmpty()) {
            errors.add(new InvalidConfigException(
                    "rollout.dataset.train", d.train(), "at least one JSONL file of training prompts" + why));
        }
        int evalEvery = settings.rollout().evalEvery();
        if (evalEvery > 0 && d.eval().isEmpty()) {
            errors.add(new InvalidConfigException(
                    "rollout.dataset.eval",
                    d.eval(),
                    "at least one JSONL file of evaluation prompts while rollout.eval_every = " + evalEvery
                            + " (or rollout.eval_every = 0 for no evaluation)" + why));
        }
        String tokenizerPath = settings.rollout().tokenizerPath();
        if (tokenizerPath == null || tokenizerPath.isEmpty()) {
            errors.add(new InvalidConfigException(
                    "rollout.tokenizer_path",
                    tokenizerPath,
                    "the model's tokenizer named explicitly: \"builtin\" for the built-in model's byte-level"
                            + " tokenizer, or a Hugging Face tokenizer directory or tokenizer.json" + why));
        }
        if (errors.size() == 1) {
            throw errors.get(0);
        }
        if (!errors.isEmpty()) {
            throw new ConfigErrors(errors);
        }
    }

    /**
     * Everything that can be refused before a process starts: {@link #check}, the tokenizer, and
     * (except for the agent, which needs the running proxy) the workflows and the accept filter,
     * built through the context class loader and kept for {@link #spec}.
     *
     * @throws InvalidConfigException naming the key at fault
     */
    NodeAssembly prepare() {
        check(settings, demo);
        tokenizer = Tokenizers.load(settings.rollout().tokenizerPath());
        agentKind = agentKind();
        if (agentKind == AgentKind.NONE) {
            built = configuredWorkflows(tokenizer);
        } else {
            agentEval = agentEvaluation(tokenizer);
            if (agentKind == AgentKind.COMMAND) {
                AgentLaunch launch = settings.agentLaunch();
                AgentCommands.requireExecutable(launch.command(), launch.workingDir());
            }
        }
        accept = acceptFilter(settings.acceptSpec());
        return this;
    }

    /** The engine's spec with {@code engine} as this node's inference engine and weight publisher. */
    LocalRollout.Spec spec(RemoteInferenceEngine engine, Path statsFile) throws IOException {
        if (tokenizer == null) {
            prepare();
        }
        ExecutorService blocking = NodeServices.virtualThreads();
        toClose.add(blocking::shutdownNow);
        HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        Workflows wf = built != null ? built : workflows(engine, tokenizer);
        RolloutSettings.Rollout r = settings.rollout();
        dumper = r.dumpToFile()
                ? new TrajectoryDumper(r.fileroot(), r.experimentName(), r.trialName(), tokenizer)
                : null;
        NodeServices svc = new NodeServices(
                RemoteEngines.controllable(engine),
                wf.train(),
                wf.eval(),
                GroupOptions.training(settings),
                GroupOptions.evaluation(settings),
                accept,
                dumper,
                r.checkTrajectoryFormat() ? new TrajectoryFormatChecker() : null,
                settings.stalenessPolicy(),
                r.maxHeadOffpolicyness(),
                r.episodeTimeout(),
                http,
                blocking);
        return new LocalRollout.Spec(
                svc,
                StalenessBudget.of(settings),
                promptSource(),
                evalItems(),
                evalEvery(),
                r.evalMaxConcurrent(),
                r.queueSize(),
                RemoteEngines.publisher(engine),
                0,
                r.nodeCapacity(),
                r.batchAckTimeout(),
                r.prepareTimeout(),
                r.weightUpdateTimeout(),
                statsFile,
                r.trainDataParallelSize());
    }

    /** The agent proxy as {@code rollout.agent.*} configures it (host, port, admin key, tool-call format). */
    static OpenAIProxy startProxy(RolloutSettings settings, RemoteInferenceEngine engine, Tokenizer tokenizer)
            throws IOException {
        AgentOptions options = AgentOptions.from(settings.agent());
        AgentLaunch launch = settings.agentLaunch();
        return PortInUseException.binding(
                "the agent proxy",
                "rollout.agent.proxy_port",
                launch.proxyHost(),
                launch.proxyPort(),
                () -> OpenAIProxy.start(
                        ProxyConfig.defaults()
                                .withHost(launch.proxyHost())
                                .withPort(launch.proxyPort())
                                .withAdminApiKey(options.adminApiKey())
                                .withToolCallFormat(options.toolCallFormat()),
                        engine,
                        tokenizer,
                        settings.gconfig()));
    }

    /** True when this node runs an agent behind its OpenAI-compatible proxy (after {@link #prepare}). */
    boolean runsAgentProxy() {
        return agentKind != AgentKind.NONE;
    }

    /** This node's dumper (after {@link #spec}), when dumps are on. */
    Optional<TrajectoryDumper> dumper() {
        return Optional.ofNullable(dumper);
    }

    /** The agent proxy's URL when this node runs online sessions (after {@link #spec}), for the banner. */
    Optional<String> onlineProxyUrl() {
        return Optional.ofNullable(onlineProxyUrl);
    }

    record Workflows(RolloutWorkflow train, RolloutWorkflow eval) {}

    Workflows workflows(RemoteInferenceEngine engine, Tokenizer tokenizer) throws IOException {
        if (agentKind == AgentKind.NONE) {
            return configuredWorkflows(tokenizer);
        }
        // Every agent runs behind the node's proxy: rollout.agent.* says how episodes export, which
        // API the demo agent uses, how the model writes tool calls, and where the proxy listens.
        AgentOptions options = AgentOptions.from(settings.agent());
        AgentLaunch launch = settings.agentLaunch();
        OpenAIProxy proxy = startProxy(settings, engine, tokenizer);
        toClose.add(proxy::close);
        if (agentKind == AgentKind.ONLINE) {
            onlineProxyUrl = proxy.baseUrl();
        }
        log.info(
                "agent proxy at {} ({} agent)",
                proxy.baseUrl(),
                agentKind.name().toLowerCase(Locale.ROOT));
        RolloutWorkflow w = switch (agentKind) {
            case DEMO ->
                AgentWorkflows.resolver(proxy, options)
                        .resolve(LETTER_AGENT, Map.of("api", options.api()))
                        .workflow();
            case COMMAND ->
                new ProcessAgentWorkflow(
                        proxy, options, launch.command(), launch.workingDir(), launch.processTimeout());
            case ONLINE -> new OnlineAgentWorkflow(proxy, options);
            case CLASS -> agentClass(proxy, options, settings.workflowKwargs(), WORKFLOW);
            case PYTHON -> new ProxyAgentWorkflow(proxy, options, new PythonAgent(pythonPool));
            case NONE -> throw new IllegalStateException("no agent");
        };
        if (agentEval != null) {
            return new Workflows(w, agentEval);
        }
        if (agentKind == AgentKind.CLASS && settings.evalWorkflowConfigured()) {
            // The agent class again, with rollout.eval_workflow_kwargs.
            return new Workflows(w, agentClass(proxy, options, settings.evalWorkflowKwargs(), EVAL_WORKFLOW));
        }
        return new Workflows(w, w);
    }

    private RolloutWorkflow agentClass(
            OpenAIProxy proxy, AgentOptions options, Map<String, Object> kwargs, WorkflowKeys keys) {
        try {
            return AgentWorkflows.resolver(proxy, options)
                    .resolve(settings.workflow(), kwargs)
                    .workflow();
        } catch (InvalidConfigException e) {
            throw keys.keyed(e);
        }
    }

    /**
     * In an agent mode, the evaluation workflow that {@code rollout.eval_workflow} names, built now
     * (it runs without the proxy); null when evaluation runs the agent.
     *
     * @throws InvalidConfigException for {@code rollout.eval_workflow_kwargs} given without {@code
     *     rollout.eval_workflow} to an agent that takes no kwargs (a command, online sessions, the demo)
     */
    private RolloutWorkflow agentEvaluation(Tokenizer tokenizer) {
        if (settings.rollout().evalWorkflow() != null) {
            configurePythonRewards();
            return build(
                    settings.evalWorkflow(),
                    settings.evalWorkflowKwargs(),
                    settings.evalGconfig(),
                    tokenizer,
                    evalKeys());
        }
        if (settings.rollout().evalWorkflowKwargs() != null && agentKind != AgentKind.CLASS) {
            throw new InvalidConfigException(
                    EVAL_WORKFLOW.kwargs(),
                    settings.rollout().evalWorkflowKwargs(),
                    "null: evaluation runs the " + agentKind.name().toLowerCase(Locale.ROOT)
                            + " agent, which takes no kwargs; name a workflow in rollout.eval_workflow to give"
                            + " it kwargs");
        }
        return null;
    }

    /**
     * {@code rollout.workflow} for training, and for evaluation {@code rollout.eval_workflow} (or the
     * same) with eval_gconfig; every error keyed.
     */
    private Workflows configuredWorkflows(Tokenizer tokenizer) {
        configurePythonRewards();
        RolloutWorkflow train =
                build(settings.workflow(), settings.workflowKwargs(), settings.gconfig(), tokenizer, WORKFLOW);
        RolloutWorkflow eval = build(
                settings.evalWorkflow(), settings.evalWorkflowKwargs(), settings.evalGconfig(), tokenizer, evalKeys());
        return new Workflows(train, eval);
    }

    /**
     * The keys an evaluation workflow's errors name: {@code rollout.eval_workflow} when it is set
     * (else the workflow is {@code rollout.workflow}'s), and {@code rollout.eval_workflow_kwargs} when
     * it is set (else the kwargs are {@code rollout.workflow_kwargs}).
     */
    private WorkflowKeys evalKeys() {
        RolloutSettings.Rollout r = settings.rollout();
        return new WorkflowKeys(
                r.evalWorkflow() != null ? EVAL_WORKFLOW.name() : WORKFLOW.name(),
                r.evalWorkflowKwargs() != null ? EVAL_WORKFLOW.kwargs() : WORKFLOW.kwargs());
    }

    /** The keys of a workflow and of its kwargs, for errors. */
    private record WorkflowKeys(String name, String kwargs) {
        /** A kwarg's error under the kwargs' key; a key of the configuration's own kept as is. */
        InvalidConfigException keyed(InvalidConfigException e) {
            String key = e.key();
            if (key.startsWith("rollout.")) {
                return e;
            }
            String prefix = "workflow_kwargs.";
            InvalidConfigException keyed = key.startsWith(prefix)
                    ? new InvalidConfigException(kwargs + "." + key.substring(prefix.length()), e.value(), e.allowed())
                    : e.under(kwargs);
            keyed.initCause(e);
            return keyed;
        }
    }

    private static final WorkflowKeys WORKFLOW = new WorkflowKeys("rollout.workflow", "rollout.workflow_kwargs");
    private static final WorkflowKeys EVAL_WORKFLOW =
            new WorkflowKeys("rollout.eval_workflow", "rollout.eval_workflow_kwargs");

    /** A built-in or class-named RolloutWorkflow (no agent proxy), every error keyed by {@code keys}. */
    private RolloutWorkflow build(
            String name, Map<String, Object> kwargs, GenerationConfig g, Tokenizer tokenizer, WorkflowKeys keys) {
        if (name.startsWith(PythonPools.PREFIX)) {
            return pythonWorkflow(name, kwargs, g, tokenizer, keys);
        }
        try {
            if (BuiltinWorkflows.isBuiltin(name)) {
                return BuiltinWorkflows.create(name, g, tokenizer, kwargs);
            }
            return new WorkflowResolver(WorkflowResolver.MODE_INLINE, null)
                    .resolve(name, withInjected(kwargs, g, tokenizer))
                    .workflow();
        } catch (InvalidConfigException e) {
            throw keys.keyed(e);
        } catch (IllegalArgumentException e) {
            if (e.getCause() instanceof InvalidConfigException kwarg) {
                // A workflow class's constructor refused one of its kwargs.
                throw keys.keyed(kwarg);
            }
            InvalidConfigException keyed = new InvalidConfigException(
                    keys.name(),
                    name,
                    "a built-in name (" + String.join(", ", BuiltinWorkflows.NAMES) + ") or a RolloutWorkflow or"
                            + " AgentWorkflow class on the class path (the engine's, --classpath, rollout.classpath);"
                            + " here: " + e.getMessage());
            keyed.initCause(e);
            throw keyed;
        }
    }

    /**
     * {@code python:package.module:ClassName}: an AReaL-style Python workflow, run in the pool of
     * {@link #pythonPool} ({@code rollout.workflow}'s pool when it is that workflow with those kwargs).
     */
    private RolloutWorkflow pythonWorkflow(
            String name, Map<String, Object> kwargs, GenerationConfig g, Tokenizer tokenizer, WorkflowKeys keys) {
        boolean training = pythonPool != null
                && name.equals(settings.workflow())
                && kwargs.equals(settings.workflowKwargs())
                && g.equals(settings.gconfig());
        PythonWorkflowPool workers = training ? pythonPool : pythonPool(name, kwargs, g, tokenizer, keys);
        if (!workers.kind().equals("workflow")) {
            throw new InvalidConfigException(
                    keys.name(),
                    name,
                    "a Python class with async arun_episode(self, engine, data); " + workers.spec()
                            + " is an agent (async run(self, data, **extra_kwargs)), which runs behind the agent"
                            + " proxy as rollout.workflow");
        }
        return new PythonWorkflow(workers, g);
    }

    /** {@link PythonPools#start}, closed with the node. */
    private PythonWorkflowPool pythonPool(
            String name, Map<String, Object> kwargs, GenerationConfig g, Tokenizer tokenizer, WorkflowKeys keys) {
        PythonWorkflowPool workers =
                PythonPools.start(settings, name, kwargs, g, tokenizer, keys.name(), keys.kwargs());
        toClose.add(workers);
        return workers;
    }

    /**
     * A {@code python:module:function} reward_fn runs in worker processes started with {@code
     * rollout.python.*}; they are killed when the node closes.
     */
    private void configurePythonRewards() {
        RolloutSettings.Python p = settings.python();
        PythonRewardPool.configure(new PythonRewardPool.Settings(
                p.executable(),
                p.path(),
                p.rewardWorkers() != null ? p.rewardWorkers() : PythonRewardPool.Settings.defaultWorkers()));
        toClose.add(PythonRewardPool::closeAll);
    }

    /** A class-named workflow gets the GenerationConfig and tokenizer objects in its kwargs, as AReaL passes them. */
    private static Map<String, Object> withInjected(
            Map<String, Object> given, GenerationConfig g, Tokenizer tokenizer) {
        Map<String, Object> kwargs = new HashMap<>(given);
        kwargs.put("gconfig", g);
        kwargs.put("tokenizer", tokenizer);
        return kwargs;
    }

    /**
     * @throws InvalidConfigException for {@code rollout.accept} when the class is missing or not an
     *     AcceptFilter
     */
    static AcceptFilter acceptFilter(String spec) {
        try {
            return switch (spec) {
                case "all" -> AcceptFilters.all();
                case "drop_equal_rewards" -> AcceptFilters.dropEqualRewards();
                default -> WorkflowResolver.resolveAcceptFilter(spec);
            };
        } catch (InvalidConfigException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            InvalidConfigException keyed = new InvalidConfigException(
                    "rollout.accept",
                    spec,
                    "all, drop_equal_rewards, or an AcceptFilter class on the class path (the engine's, --classpath,"
                            + " rollout.classpath); here: " + e.getMessage());
            keyed.initCause(e);
            throw keyed;
        }
    }

    /** The training prompts: {@code rollout.dataset.train}, or in the demo the letters task's. */
    PromptSource promptSource() {
        RolloutSettings.Dataset d = settings.dataset();
        if (!d.train().isEmpty()) {
            return DatasetLines.read("rollout.dataset.train", d.train(), true, d.shuffleSeed(), d.onMalformed());
        }
        if (!demo) {
            check(settings, false);
        }
        return new GeneratedPromptSource(LetterTask::item, -1);
    }

    /**
     * In the demo with the built-in letters as eval items, evaluate every {@value #DEMO_EVAL_EVERY}
     * versions by default; otherwise {@code rollout.eval_every}.
     */
    int evalEvery() {
        int configured = settings.rollout().evalEvery();
        return demo && configured == 0 && settings.dataset().eval().isEmpty() ? DEMO_EVAL_EVERY : configured;
    }

    List<Map<String, Object>> evalItems() {
        RolloutSettings.Dataset d = settings.dataset();
        if (!d.eval().isEmpty()) {
            JsonlPromptSource eval = DatasetLines.read("rollout.dataset.eval", d.eval(), false, null, d.onMalformed());
            List<Map<String, Object>> items = new ArrayList<>();
            for (long i = 0; i < eval.size(); i++) {
                items.add(eval.item(i).orElseThrow());
            }
            return items;
        }
        return demo ? LetterTask.evalItems() : List.of();
    }
}
