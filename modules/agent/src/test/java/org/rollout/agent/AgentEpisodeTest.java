package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContext;
import org.rollout.api.WorkflowContractException;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.ChatMl;
import org.rollout.core.GroupMerger;
import org.rollout.core.GroupOptions;
import org.rollout.core.GroupOutcome;
import org.rollout.core.InteractionTensors;
import org.rollout.testengine.ScriptedEngine;

/**
 * Agent episodes against the real built-in model (ModelServer + RemoteInferenceEngine over HTTP):
 * what a multi-turn episode records, how it exports, and a weight update in the middle of a turn.
 */
class AgentEpisodeTest {
    private static final GenerationConfig DEFAULTS =
            GenerationConfig.builder().maxTokens(4096).maxNewTokens(16).build();

    @TempDir
    Path dir;

    private BuiltInModel model;
    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private void start(BuiltInModel m) throws Exception {
        model = m;
        proxy = OpenAIProxy.start(ProxyConfig.defaults(), model.engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
    }

    /** Two turns over plain HTTP: ask, append the answer and a follow-up, ask again; reward 1. */
    private static final AgentWorkflow TWO_TURNS = (data, env) -> {
        List<Map<String, Object>> messages = new ArrayList<>();
        messages.add(PlainChat.user((String) data.get("question")));
        JsonNode first = PlainChat.complete(env, messages, Map.of("seed", 11, "max_completion_tokens", 12));
        messages.add(PlainChat.message(first));
        messages.add(PlainChat.user("And then?"));
        PlainChat.complete(env, messages, Map.of("seed", 12, "max_completion_tokens", 12));
        return 1.0;
    };

    private static WorkflowContext context(long task, int slot, int groupSize, List<Double> rewards) {
        return WorkflowContext.builder()
                .taskId(task)
                .sampleIdx(slot)
                .groupSize(groupSize)
                .stats((key, value) -> {
                    if (key.equals("reward")) {
                        rewards.add(value);
                    }
                })
                .build();
    }

    @Test
    void aMultiTurnEpisodeRecordsPromptsOutputsLogprobsVersionsAndParents() throws Exception {
        start(BuiltInModel.seeded());
        List<Double> stats = new ArrayList<>();
        EpisodeResult result = WorkflowContext.callWith(
                context(5, 0, 1, stats),
                () -> new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), TWO_TURNS)
                        .runEpisode(model.engine, Map.of("question", "Hi")));

        Map<String, Interaction> byId = ((EpisodeResult.Interactions) result).byId();
        List<Interaction> turns = List.copyOf(byId.values());
        assertThat(turns).hasSize(2);
        Interaction first = turns.get(0);
        Interaction second = turns.get(1);
        assertThat(first.parent()).isNull();
        assertThat(second.parent().id()).isEqualTo(first.id());
        for (Interaction it : turns) {
            ModelResponse r = it.modelResponse();
            assertThat(r.inputTokens())
                    .containsExactly(ByteLevelTokenizer.INSTANCE.encode(ChatMl.render(it.messages(), true)));
            assertThat(r.outputLength()).isBetween(1, 12);
            assertThat(r.outputLogprobs()).hasSize(r.outputLength());
            assertThat(r.outputVersions()).containsOnly(0);
        }
        // individual export, turn_discount 1: both rows carry the final reward.
        assertThat(turns).extracting(Interaction::reward).containsExactly(1.0, 1.0);
        assertThat(stats).containsExactly(1.0);
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void concatExportIsOneRowWithBothTurnsTrainedAndTheContextMasked() throws Exception {
        start(BuiltInModel.seeded());
        EpisodeResult result = WorkflowContext.callWith(
                context(6, 0, 1, new ArrayList<>()),
                () -> new ProxyAgentWorkflow(
                                proxy, AgentOptions.defaults().withExportStyle(ExportStyle.CONCAT), TWO_TURNS)
                        .runEpisode(model.engine, Map.of("question", "Hi")));

        Map<String, Interaction> byId = ((EpisodeResult.Interactions) result).byId();
        assertThat(byId).hasSize(1);
        Interaction leaf = byId.values().iterator().next();
        Interaction parent = leaf.parent();
        assertThat(leaf.chatTemplateType()).isEqualTo(Interaction.ChatTemplateType.CONCAT);
        ModelResponse p = parent.modelResponse();
        ModelResponse c = leaf.modelResponse();
        // The child's prompt extends the parent's whole sequence token for token.
        int[] childInput = c.inputTokens();
        int[] parentIn = p.inputTokens();
        int[] parentOut = p.outputTokens();
        for (int i = 0; i < parentIn.length; i++) {
            assertThat(childInput[i]).isEqualTo(parentIn[i]);
        }
        for (int i = 0; i < parentOut.length; i++) {
            assertThat(childInput[parentIn.length + i]).isEqualTo(parentOut[i]);
        }

        TensorDict row = InteractionTensors.toTensorDict((EpisodeResult.Interactions) result, 6, 0);
        int len = childInput.length + c.outputLength();
        assertThat(row.tensor(TensorDict.INPUT_IDS).dim(0)).isEqualTo(1);
        assertThat(row.tensor(TensorDict.INPUT_IDS).dim(1)).isEqualTo(len);
        int parentEnd = parentIn.length + parentOut.length;
        for (int j = 0; j < len; j++) {
            long mask = row.tensor(TensorDict.LOSS_MASK).getLong(j);
            long turn = row.tensor(TensorDict.TURN_IDS).getLong(j);
            long version = row.tensor(TensorDict.VERSIONS).getLong(j);
            double logprob = row.tensor(TensorDict.LOGPROBS).getDouble(j);
            if (j >= parentIn.length && j < parentEnd) {
                assertThat(mask).as("parent output at %d", j).isEqualTo(1);
                assertThat(turn).isEqualTo(0);
                assertThat(logprob).isEqualTo(p.outputLogprob(j - parentIn.length), offset(1e-6));
            } else if (j >= childInput.length) {
                assertThat(mask).as("child output at %d", j).isEqualTo(1);
                assertThat(turn).isEqualTo(1);
                assertThat(logprob).isEqualTo(c.outputLogprob(j - childInput.length), offset(1e-6));
            } else {
                assertThat(mask).as("context at %d", j).isEqualTo(0);
                assertThat(version).isEqualTo(-1);
            }
        }
        assertThat(row.tensor(TensorDict.REWARDS).getDouble(0)).isEqualTo(1.0);
    }

    @Test
    void individualRowsWithATurnDiscountNormaliseAcrossTheGroupByTheirTerminalReward() throws Exception {
        start(BuiltInModel.seeded());
        AgentOptions options = AgentOptions.defaults().withTurnDiscount(0.5);
        List<EpisodeResult> slots = new ArrayList<>();
        for (int slot = 0; slot < 2; slot++) {
            double reward = slot == 0 ? 1.0 : 0.0;
            AgentWorkflow agent = (data, env) -> {
                TWO_TURNS.run(data, env);
                return reward;
            };
            slots.add(WorkflowContext.callWith(
                    context(7, slot, 2, new ArrayList<>()),
                    () -> new ProxyAgentWorkflow(proxy, options, agent)
                            .runEpisode(model.engine, Map.of("question", "Hi"))));
        }
        List<Interaction> slot0 =
                List.copyOf(((EpisodeResult.Interactions) slots.get(0)).byId().values());
        assertThat(slot0).extracting(Interaction::reward).containsExactly(0.5, 1.0);
        assertThat(slot0).extracting(Interaction::rolloutReward).containsExactly(1.0, 1.0);

        GroupOutcome outcome = GroupMerger.merge(7, slots, new GroupOptions(2, 1, false, true, true));
        GroupOutcome.Merged merged = (GroupOutcome.Merged) outcome;
        assertThat(merged.slotRowCounts()).containsExactly(2, 2);
        assertThat(merged.slotReferences()).containsExactly(new double[] {1.0, -1.0}, offset(1e-4));
        // centre 0.5, scale 0.5: slot 0's rows (0.5, 1.0) become (0, 1); slot 1's (0, 0) become (-1, -1).
        TensorDict rows = merged.rows();
        double[] normalised = new double[4];
        for (int i = 0; i < 4; i++) {
            normalised[i] = rows.tensor(TensorDict.REWARDS).getDouble(i);
        }
        assertThat(normalised).containsExactly(new double[] {0.0, 1.0, -1.0, -1.0}, offset(1e-4));
    }

    @Test
    void aWeightUpdateInTheMiddleOfATurnShowsAsTwoVersionsInOneInteraction() throws Exception {
        int a = 'a';
        int b = 'b';
        start(BuiltInModel.start(BuiltInModel.slow(BuiltInModel.repeating(a, 0), Duration.ofMillis(25))));
        Path v1 = dir.resolve("v1.rlm");
        BuiltInModel.repeating(b, 1).write(v1);
        long before = model.server.stats().tokensGenerated();
        AgentWorkflow oneLongTurn = (data, env) -> {
            PlainChat.complete(env, List.of(PlainChat.user("go")), Map.of("max_completion_tokens", 80));
            return 1.0;
        };
        CompletableFuture<EpisodeResult> episode = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                episode.complete(WorkflowContext.callWith(
                        context(8, 0, 1, new ArrayList<>()),
                        () -> new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), oneLongTurn)
                                .runEpisode(model.engine, Map.of())));
            } catch (Throwable t) {
                episode.completeExceptionally(t);
            }
        });
        BuiltInModel.await(
                "the turn to generate 10 tokens",
                Duration.ofSeconds(30),
                () -> model.server.stats().tokensGenerated() - before >= 10);
        model.engine.updateWeights(v1, 1);
        EpisodeResult result = episode.get(60, TimeUnit.SECONDS);

        Interaction it =
                ((EpisodeResult.Interactions) result).byId().values().iterator().next();
        ModelResponse r = it.modelResponse();
        assertThat(r.outputLength()).isEqualTo(80);
        int[] versions = r.outputVersions();
        int[] tokens = r.outputTokens();
        assertThat(versions).contains(0, 1);
        for (int i = 0; i < versions.length; i++) {
            if (i > 0) {
                assertThat(versions[i]).as("versions never go back").isGreaterThanOrEqualTo(versions[i - 1]);
            }
            // Old weights say 'a', new weights say 'b': each token is labelled with the weights that made it.
            assertThat(tokens[i]).as("token %d (version %d)", i, versions[i]).isEqualTo(versions[i] == 0 ? a : b);
        }
    }

    @Test
    void theSessionIsKeyedByTheEpisodeAndClosedAfterwards() throws Exception {
        ScriptedEngine engine = ScriptedEngine.replying("x");
        proxy = OpenAIProxy.start(ProxyConfig.defaults(), engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
        ConcurrentLinkedQueue<String> urls = new ConcurrentLinkedQueue<>();
        AgentWorkflow agent = (data, env) -> {
            urls.add(env.baseUrl().toString());
            assertThat(env.context().taskId()).hasValue(12);
            PlainChat.complete(env, List.of(PlainChat.user("q")), Map.of());
            return 0.5;
        };
        WorkflowContext.callWith(
                context(12, 3, 4, new ArrayList<>()),
                () -> new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), agent).runEpisode(engine, Map.of()));
        assertThat(urls).containsExactly(proxy.baseUrl() + "/s/12:3/v1");
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void aSecondAttemptOfTheSameSlotGetsItsOwnSession() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(), ScriptedEngine.scripted(), ByteLevelTokenizer.INSTANCE, DEFAULTS);
        ProxySession first = proxy.openSession("12:3", Interaction.ChatTemplateType.HF);
        ProxySession second = proxy.openSession("12:3", Interaction.ChatTemplateType.HF);
        assertThat(first.id()).isEqualTo("12:3");
        assertThat(second.id()).isEqualTo("12:3~2");
        assertThat(second.apiKey()).isNotEqualTo(first.apiKey());
    }

    @Test
    void anEpisodeWithNoCompletionIsRejected() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(), ScriptedEngine.scripted(), ByteLevelTokenizer.INSTANCE, DEFAULTS);
        EpisodeResult r =
                new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), (data, env) -> 1.0).runEpisode(null, Map.of());
        assertThat(r).isEqualTo(EpisodeResult.rejected("no completions"));
    }

    @Test
    void anAgentRejectsItsEpisodeByThrowingEpisodeRejected() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(), ScriptedEngine.scripted(), ByteLevelTokenizer.INSTANCE, DEFAULTS);
        EpisodeResult r = new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), (data, env) -> {
                    throw new EpisodeRejectedException("the environment crashed");
                })
                .runEpisode(null, Map.of());
        assertThat(r).isEqualTo(EpisodeResult.rejected("the environment crashed"));
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void aBadReturnValueIsAContractErrorAndTheSessionIsClosed() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(), ScriptedEngine.replying("x"), ByteLevelTokenizer.INSTANCE, DEFAULTS);
        ProxyAgentWorkflow w = new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), (data, env) -> {
            PlainChat.complete(env, List.of(PlainChat.user("q")), Map.of());
            return "great";
        });
        assertThatThrownBy(() -> WorkflowContext.callWith(
                        context(2, 1, 2, new ArrayList<>()), () -> w.runEpisode(null, Map.of())))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageStartingWith("agent episode 2:1 returned the string \"great\"");
        assertThat(proxy.openSessions()).isZero();
    }

    @Test
    void aMapOfRewardsIsAppliedPerCompletion() throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(), ScriptedEngine.replying("x", "y"), ByteLevelTokenizer.INSTANCE, DEFAULTS);
        EpisodeResult r = new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), (data, env) -> {
                    String a = PlainChat.complete(env, List.of(PlainChat.user("q1")), Map.of())
                            .get("id")
                            .asText();
                    PlainChat.complete(env, List.of(PlainChat.user("q2")), Map.of());
                    return Map.of(a, 0.25);
                })
                .runEpisode(null, Map.of());
        // The second completion has no reward of its own; it is the last, so the terminal reward is 0.
        assertThat(((EpisodeResult.Interactions) r).byId().values())
                .extracting(Interaction::reward)
                .containsExactly(0.25, 0.0);
    }

    @Test
    void interruptingTheEpisodeClosesTheSessionAndAbortsTheGeneration() throws Exception {
        ScriptedEngine engine = ScriptedEngine.scripted().thenBlock();
        proxy = OpenAIProxy.start(ProxyConfig.defaults(), engine, ByteLevelTokenizer.INSTANCE, DEFAULTS);
        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                new ProxyAgentWorkflow(proxy, AgentOptions.defaults(), (data, env) -> {
                            PlainChat.complete(env, List.of(PlainChat.user("q")), Map.of());
                            return 1.0;
                        })
                        .runEpisode(null, Map.of());
                failure.complete(null);
            } catch (Throwable e) {
                failure.complete(e);
            }
        });
        assertThat(engine.awaitBlocking(1, Duration.ofSeconds(30))).isTrue();
        t.interrupt();
        assertThat(failure.get(30, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        BuiltInModel.await("the session to close", Duration.ofSeconds(30), () -> proxy.openSessions() == 0);
    }
}
