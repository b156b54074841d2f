package org.rollout.cli;

import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.rollout.agent.AgentOptions;
import org.rollout.agent.AgentWorkflows;
import org.rollout.agent.OpenAIProxy;
import org.rollout.agent.ProxyConfig;
import org.rollout.api.AcceptFilter;
import org.rollout.api.GenerationConfig;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.Tokenizer;
import org.rollout.cluster.GeneratedPromptSource;
import org.rollout.cluster.JsonlPromptSource;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.NodeServices;
import org.rollout.cluster.PromptSource;
import org.rollout.cluster.RemoteEngines;
import org.rollout.config.RolloutSettings;
import org.rollout.core.AcceptFilters;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.core.Tokenizers;
import org.rollout.core.TrajectoryDumper;
import org.rollout.core.TrajectoryFormatChecker;
import org.rollout.core.WorkflowResolver;
import org.rollout.examples.BuiltinWorkflows;
import org.rollout.examples.PythonRewardPool;
import org.rollout.examples.demo.LetterTask;
import org.rollout.inference.RemoteInferenceEngine;

/**
 * What one engine node is made of, from validated settings and its inference engine: the
 * workflows (built-in, class-named, or the demo agent behind the OpenAI-compatible proxy), the
 * node's services, the prompt source and evaluation items. {@code rollout local} and {@code
 * rollout node} both build their engine with it, so a node of a cluster runs exactly what a local
 * run does. What it starts (the agent proxy, the executor) is added to {@code toClose}.
 */
final class NodeAssembly {
    static final int DEMO_EVAL_EVERY = LocalRun.DEMO_EVAL_EVERY;
    static final String LETTER_AGENT = LocalRun.LETTER_AGENT;

    private final RolloutSettings settings;
    private final String workflow;
    private final List<AutoCloseable> toClose;

    /**
     * @param workflow {@code demo} or {@code agent} ({@code rollout local --workflow}); {@code
     *     rollout.workflow} decides otherwise
     */
    NodeAssembly(RolloutSettings settings, String workflow, List<AutoCloseable> toClose) {
        this.settings = settings;
        this.workflow = workflow;
        this.toClose = toClose;
    }

    /** The engine's spec with {@code engine} as this node's inference engine and weight publisher. */
    LocalRollout.Spec spec(RemoteInferenceEngine engine, Path statsFile) throws java.io.IOException {
        Tokenizer tokenizer = Tokenizers.load(settings.rollout().tokenizerPath());
        ExecutorService blocking = NodeServices.virtualThreads();
        toClose.add(blocking::shutdownNow);
        HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        Workflows wf = workflows(engine, tokenizer);
        RolloutSettings.Rollout r = settings.rollout();
        NodeServices svc = new NodeServices(
                RemoteEngines.controllable(engine),
                wf.train(),
                wf.eval(),
                GroupOptions.training(settings),
                GroupOptions.evaluation(settings),
                acceptFilter(settings.acceptSpec()),
                r.dumpToFile()
                        ? new TrajectoryDumper(r.fileroot(), r.experimentName(), r.trialName(), tokenizer)
                        : null,
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
                statsFile);
    }

    record Workflows(RolloutWorkflow train, RolloutWorkflow eval) {}

    Workflows workflows(RemoteInferenceEngine engine, Tokenizer tokenizer) throws java.io.IOException {
        String name = settings.workflow();
        if (workflow.equals("agent") || name.equals("agent")) {
            // rollout.agent.api: which API (chat, responses, messages) the demo agent talks to the proxy;
            // rollout.agent.tool_call_format: how the model writes tool calls (auto: from its chat template).
            AgentOptions options = AgentOptions.from(settings.agent());
            OpenAIProxy proxy = OpenAIProxy.start(
                    ProxyConfig.defaults()
                            .withAdminApiKey(options.adminApiKey())
                            .withToolCallFormat(options.toolCallFormat()),
                    engine,
                    tokenizer,
                    settings.gconfig());
            toClose.add(proxy::close);
            WorkflowResolver resolver = AgentWorkflows.resolver(proxy, options);
            RolloutWorkflow agent =
                    resolver.resolve(LETTER_AGENT, Map.of("api", options.api())).workflow();
            return new Workflows(agent, agent);
        }
        configurePythonRewards();
        if (BuiltinWorkflows.isBuiltin(name)) {
            return new Workflows(
                    BuiltinWorkflows.create(name, settings.gconfig(), tokenizer, settings.workflowKwargs()),
                    BuiltinWorkflows.create(name, settings.evalGconfig(), tokenizer, settings.workflowKwargs()));
        }
        WorkflowResolver resolver = new WorkflowResolver(WorkflowResolver.MODE_INLINE, null);
        return new Workflows(
                resolver.resolve(name, withInjected(settings.gconfig(), tokenizer))
                        .workflow(),
                resolver.resolve(name, withInjected(settings.evalGconfig(), tokenizer))
                        .workflow());
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
    private Map<String, Object> withInjected(GenerationConfig g, Tokenizer tokenizer) {
        Map<String, Object> kwargs = new HashMap<>(settings.workflowKwargs());
        kwargs.put("gconfig", g);
        kwargs.put("tokenizer", tokenizer);
        return kwargs;
    }

    static AcceptFilter acceptFilter(String spec) {
        return switch (spec) {
            case "all" -> AcceptFilters.all();
            case "drop_equal_rewards" -> AcceptFilters.dropEqualRewards();
            default -> WorkflowResolver.resolveAcceptFilter(spec);
        };
    }

    PromptSource promptSource() {
        RolloutSettings.Dataset d = settings.dataset();
        if (!d.train().isEmpty()) {
            return new JsonlPromptSource(d.train(), true, d.shuffleSeed(), d.onMalformed());
        }
        return new GeneratedPromptSource(LetterTask::item, -1);
    }

    /** With the built-in letters as eval items, evaluate every {@value #DEMO_EVAL_EVERY} versions by default. */
    int evalEvery() {
        int configured = settings.rollout().evalEvery();
        return configured == 0 && settings.dataset().eval().isEmpty() ? DEMO_EVAL_EVERY : configured;
    }

    List<Map<String, Object>> evalItems() {
        RolloutSettings.Dataset d = settings.dataset();
        if (!d.eval().isEmpty()) {
            JsonlPromptSource eval = new JsonlPromptSource(d.eval(), false, null, d.onMalformed());
            List<Map<String, Object>> items = new ArrayList<>();
            for (long i = 0; i < eval.size(); i++) {
                items.add(eval.item(i).orElseThrow());
            }
            return items;
        }
        return LetterTask.evalItems();
    }
}
