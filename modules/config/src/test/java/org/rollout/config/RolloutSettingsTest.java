package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.hocon;
import static org.rollout.config.ConfigFixtures.load;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;

/** Derived values and the objects the settings build for the runtime. */
class RolloutSettingsTest {
    @TempDir
    Path dir;

    // ---- derived values ----

    @Test
    void maxConcurrentRolloutsFollowsConsumerBatchSizeWhenNull() {
        assertThat(load("rollout.consumer_batch_size=6").rollout().maxConcurrentRollouts())
                .isEqualTo(6);
    }

    @Test
    void queueSizeIsSixteenTimesMaxConcurrentRolloutsWhenNull() {
        assertThat(load("rollout.max_concurrent_rollouts=5").rollout().queueSize())
                .isEqualTo(80);
    }

    @Test
    void queueSizeDerivedFromAHugeConcurrencyStopsAtTheLargestInt() {
        assertThat(load("rollout.max_concurrent_rollouts=2000000000").rollout().queueSize())
                .isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void anExplicitQueueSizeIsKept() {
        assertThat(load("rollout.consumer_batch_size=4", "rollout.queue_size=4")
                        .rollout()
                        .queueSize())
                .isEqualTo(4);
    }

    @Test
    void nodeCapacityAndEvalConcurrencyFollowMaxConcurrentRolloutsWhenNull() {
        RolloutSettings.Rollout r = load("rollout.max_concurrent_rollouts=12").rollout();
        assertThat(r.nodeCapacity()).isEqualTo(12);
        assertThat(r.evalMaxConcurrent()).isEqualTo(12);
    }

    @Test
    void explicitNodeCapacityAndEvalConcurrencyAreKept() {
        RolloutSettings.Rollout r = load(
                        "rollout.max_concurrent_rollouts=12",
                        "rollout.node_capacity=3",
                        "rollout.eval_max_concurrent=2")
                .rollout();
        assertThat(r.nodeCapacity()).isEqualTo(3);
        assertThat(r.evalMaxConcurrent()).isEqualTo(2);
    }

    @Test
    void minUsableGroupSizeIsOneWithoutGroupStatistics() {
        RolloutSettings s = load("gconfig.n_samples=8", "actor.adv_norm.mean_level=batch");
        assertThat(s.usesGroupStatistics()).isFalse();
        assertThat(s.minUsableGroupSize()).isEqualTo(1);
    }

    @Test
    void minUsableGroupSizeIsTwoUnderGroupLevelTrainerNormalisation() {
        RolloutSettings s = load("gconfig.n_samples=8", "actor.adv_norm.std_level=group");
        assertThat(s.usesGroupStatistics()).isTrue();
        assertThat(s.minUsableGroupSize()).isEqualTo(2);
    }

    @Test
    void minUsableGroupSizeIsTwoUnderRolloutRewardNormalisation() {
        assertThat(load("gconfig.n_samples=8", "gconfig.reward_normalization=true")
                        .minUsableGroupSize())
                .isEqualTo(2);
    }

    @Test
    void minUsableGroupSizeIsOneForSingletonGroupsEvenUnderGroupStatistics() {
        assertThat(load("actor.reward_norm.mean_level=group").minUsableGroupSize())
                .isEqualTo(1);
    }

    @Test
    void anExplicitMinUsableGroupSizeWins() {
        RolloutSettings s = load("gconfig.n_samples=8", "actor.min_usable_group_size=5");
        assertThat(s.minUsableGroupSize()).isEqualTo(5);
        assertThat(s.actor().minUsableGroupSize()).isEqualTo(5);
    }

    @Test
    void nullNormsAreArealsNone() {
        RolloutSettings s = hocon("actor { reward_norm = null, adv_norm = null }");
        assertThat(s.actor().rewardNorm()).isEqualTo(RolloutSettings.Norm.NONE);
        assertThat(s.actor().advNorm()).isEqualTo(RolloutSettings.Norm.NONE);
    }

    @Test
    void normLevelsAreRead() {
        RolloutSettings s = hocon("actor.reward_norm { mean_level = batch, std_level = group }");
        assertThat(s.actor().rewardNorm())
                .isEqualTo(new RolloutSettings.Norm(RolloutSettings.NormLevel.BATCH, RolloutSettings.NormLevel.GROUP));
    }

    // ---- gconfig and eval_gconfig ----

    @Test
    void evalGconfigReplacesOnlyTheKeysItGives() {
        RolloutSettings s = load(
                "gconfig.n_samples=8",
                "gconfig.temperature=0.9",
                "gconfig.max_new_tokens=256",
                "eval_gconfig.n_samples=2",
                "eval_gconfig.temperature=0.0");
        assertThat(s.evalGconfig())
                .isEqualTo(s.gconfig().toBuilder().nSamples(2).temperature(0.0).build());
        assertThat(s.evalGconfig().maxNewTokens()).isEqualTo(256);
    }

    @Test
    void aNullEvalGconfigIsACopyOfGconfig() {
        RolloutSettings s = hocon("gconfig.n_samples = 3\neval_gconfig = null");
        assertThat(s.evalGconfig()).isEqualTo(s.gconfig());
    }

    // ---- rollout values ----

    @Test
    void stalenessPolicyIsRead() {
        assertThat(load("rollout.staleness_policy=cancel", "rollout.max_head_offpolicyness=1")
                        .stalenessPolicy())
                .isEqualTo(StalenessPolicy.CANCEL);
    }

    @Test
    void workflowAndItsKwargsAreCarriedUnresolved() {
        RolloutSettings s = hocon("""
                rollout.workflow = "com.example.MathWorkflow"
                rollout.workflow_kwargs { max_turns = 3, reward = { name = "math", weights = [0.5, 1] } }
                """);
        assertThat(s.workflow()).isEqualTo("com.example.MathWorkflow");
        assertThat(s.workflowKwargs())
                .isEqualTo(Map.of("max_turns", 3, "reward", Map.of("name", "math", "weights", List.of(0.5, 1))));
    }

    @Test
    void workflowKwargsCannotBeChanged() {
        Map<String, Object> kwargs = load("rollout.workflow_kwargs={a = [1]}").workflowKwargs();
        assertThatThrownBy(() -> kwargs.put("b", 2)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> ((List<?>) kwargs.get("a")).clear()).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void datasetPathsAndOptionsAreRead() throws IOException {
        Path train = Files.writeString(dir.resolve("train.jsonl"), "{\"prompt\": \"a\"}\n");
        Path eval = Files.writeString(dir.resolve("eval.jsonl"), "{\"prompt\": \"b\"}\n");
        RolloutSettings s = load(
                "rollout.dataset.train=[\"" + train + "\"]",
                "rollout.dataset.eval=[\"" + eval + "\"]",
                "rollout.dataset.shuffle_seed=42",
                "rollout.dataset.on_malformed=fail");
        assertThat(s.dataset())
                .isEqualTo(new RolloutSettings.Dataset(List.of(train), List.of(eval), 42L, OnMalformed.FAIL));
    }

    @Test
    void runDirectoryIsFilerootExperimentTrial() {
        assertThat(load("rollout.fileroot=/data/runs", "rollout.experiment_name=gsm8k", "rollout.trial_name=t1")
                        .runDirectory())
                .contains(Path.of("/data/runs/gsm8k/t1"));
    }

    @Test
    void anExistingTokenizerPathIsKept() throws IOException {
        Path tokenizer = Files.createDirectory(dir.resolve("tok"));
        assertThat(load("rollout.tokenizer_path=" + tokenizer).rollout().tokenizerPath())
                .isEqualTo(tokenizer.toString());
    }

    @Test
    void theWholeConfigurationKeepsTheUsersPekkoSection() {
        RolloutSettings s = load("pekko.actor.provider=cluster", "rollout.consumer_batch_size=2");
        assertThat(s.config().getString("pekko.actor.provider")).isEqualTo("cluster");
        assertThat(s.config().getInt("rollout.consumer_batch_size")).isEqualTo(2);
    }

    // ---- inference ----

    @Test
    void inferenceConfigUsesTheConfiguredServersAndValues() {
        RolloutSettings s = load(
                "rollout.servers=[\"127.0.0.1:30000\", \"127.0.0.1:30001\"]",
                "rollout.backend=vllm:d2t4",
                "rollout.request_timeout=120",
                "rollout.request_retries=5",
                "rollout.routing_strategy=round_robin",
                "rollout.sticky_by_rid=false",
                "rollout.pause_grace_period=0.25",
                "rollout.deterministic_sampling=true");
        InferenceConfig c = s.inferenceConfig();
        assertThat(c)
                .isEqualTo(InferenceConfig.builder()
                        .addresses("127.0.0.1:30000", "127.0.0.1:30001")
                        .backend("vllm:d2t4")
                        .requestTimeout(java.time.Duration.ofSeconds(120))
                        .requestRetries(5)
                        .routingStrategy(RoutingStrategy.ROUND_ROBIN)
                        .stickyByRid(false)
                        .pauseGracePeriod(java.time.Duration.ofMillis(250))
                        .deterministicSampling(true)
                        .build());
        assertThat(c.backend()).isEqualTo(Backend.VLLM);
        assertThat(c.deterministicSampling()).isTrue();
        assertThat(c.dataParallelSize()).isEqualTo(2);
    }

    @Test
    void inferenceConfigTakesTheServersALauncherStarted() {
        RolloutSettings s = load("rollout.request_retries=2");
        List<ServerAddress> launched = List.of(new ServerAddress("127.0.0.1", 41001));
        InferenceConfig c = s.inferenceConfig(launched);
        assertThat(c.addresses()).isEqualTo(launched);
        assertThat(c.requestRetries()).isEqualTo(2);
    }

    @Test
    void inferenceConfigWithoutServersIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> load().inferenceConfig())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.servers': [] (allowed: at least one host:port (none is"
                        + " configured, and no launcher supplied any))");
    }

    @Test
    void inferenceConfigWithAnEmptyLauncherListIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> load().inferenceConfig(List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.servers': [] (allowed: at least one host:port)");
    }
}
