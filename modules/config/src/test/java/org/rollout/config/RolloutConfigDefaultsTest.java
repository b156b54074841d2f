package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.config.ConfigFixtures.load;

import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;

/** Without a file or overrides, the settings are AReaL's defaults (semantics §1.3, §10) and ours where AReaL has none. */
class RolloutConfigDefaultsTest {

    @Test
    void rolloutDefaultsAreArealsWhereArealHasTheKnob() {
        RolloutSettings.Rollout r = load().rollout();
        assertThat(r.consumerBatchSize()).isEqualTo(1);
        assertThat(r.maxHeadOffpolicyness()).isZero();
        // null in AReaL: falls back to consumer_batch_size, and queue_size to that × 16 (semantics §6.8).
        assertThat(r.maxConcurrentRollouts()).isEqualTo(1);
        assertThat(r.queueSize()).isEqualTo(16);
        assertThat(r.dumpToFile()).isFalse();
        assertThat(r.checkTrajectoryFormat()).isFalse();
        assertThat(r.tokenizerPath()).isEmpty();
    }

    @Test
    void rolloutDefaultsOfOurOwnKnobs() {
        RolloutSettings.Rollout r = load().rollout();
        assertThat(r.experimentName()).isEqualTo("rollout");
        assertThat(r.trialName()).isEqualTo("trial0");
        assertThat(r.fileroot()).isEqualTo(Path.of("runs"));
        assertThat(r.stalenessPolicy()).isEqualTo(StalenessPolicy.ADMISSION);
        assertThat(r.episodeTimeout()).isEqualTo(Duration.ofSeconds(3600));
        assertThat(r.batchAckTimeout()).isEqualTo(Duration.ofSeconds(600));
        assertThat(r.weightUpdateTimeout()).isEqualTo(Duration.ofSeconds(600));
        assertThat(r.prepareTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(r.nodeCapacity()).isEqualTo(1);
        assertThat(r.evalEvery()).isZero();
        assertThat(r.evalMaxConcurrent()).isEqualTo(1);
        assertThat(r.workflow()).isEqualTo("rlvr");
        assertThat(r.workflowKwargs()).isEmpty();
        assertThat(r.accept()).isEqualTo("all");
        assertThat(r.dataset()).isEqualTo(new RolloutSettings.Dataset(List.of(), List.of(), null, OnMalformed.SKIP));
    }

    @Test
    void gconfigDefaultsAreGenerationHyperparametersDefaults() {
        GenerationConfig g = load().gconfig();
        assertThat(g).isEqualTo(GenerationConfig.defaults());
        // semantics §1.3 spelled out, so that a change of GenerationConfig's defaults shows here too.
        assertThat(g.nSamples()).isEqualTo(1);
        assertThat(g.maxNewTokens()).isEqualTo(16384);
        assertThat(g.minNewTokens()).isZero();
        assertThat(g.maxTokens()).isEqualTo(32768);
        assertThat(g.greedy()).isFalse();
        assertThat(g.topP()).isEqualTo(1.0);
        assertThat(g.topK()).isEqualTo(100_000_000);
        assertThat(g.temperature()).isEqualTo(1.0);
        assertThat(g.stopTokenIds()).isEmpty();
        assertThat(g.ignoreEos()).isFalse();
        assertThat(g.skipSpecialTokens()).isTrue();
        assertThat(g.stop()).isEmpty();
        assertThat(g.frequencyPenalty()).isZero();
        assertThat(g.seed()).isNull();
        assertThat(g.loraName()).isEqualTo("default_lora");
        assertThat(g.useBeamSearch()).isFalse();
        assertThat(g.rewardNormalization()).isFalse();
        assertThat(g.rewardNormalizationUseStd()).isTrue();
        assertThat(g.dropIncompleteGroup()).isFalse();
    }

    @Test
    void evalGconfigDefaultsToACopyOfGconfig() {
        RolloutSettings s = load("gconfig.n_samples=4", "gconfig.temperature=0.6");
        assertThat(s.evalGconfig()).isEqualTo(s.gconfig());
    }

    @Test
    void inferenceDefaultsAreInferenceConfigDefaults() {
        ServerAddress server = ServerAddress.parse("127.0.0.1:30000");
        InferenceConfig expected =
                InferenceConfig.builder().serverAddresses(List.of(server)).build();
        assertThat(load().inferenceConfig(List.of(server))).isEqualTo(expected);
    }

    @Test
    void everyInferenceConfigKeyIsARolloutKeyWithAddressesCalledServers() {
        Map<String, Object> rollout =
                RolloutConfig.reference().toConfig().getObject("rollout").unwrapped();
        for (String key : InferenceConfig.KEYS) {
            assertThat(rollout).containsKey(key.equals("addresses") ? "servers" : key);
        }
    }

    @Test
    void actorDefaultsDeriveMinUsableGroupSizeOfOne() {
        RolloutSettings s = load();
        assertThat(s.actor())
                .isEqualTo(new RolloutSettings.Actor(null, RolloutSettings.Norm.NONE, RolloutSettings.Norm.NONE));
        assertThat(s.minUsableGroupSize()).isEqualTo(1);
        assertThat(s.servers()).isEmpty();
    }

    @Test
    void defaultsRaiseNoWarning() {
        assertThat(load().warnings()).isEmpty();
    }

    @Test
    void anEmptyConfigAndNoFileGiveTheSameSettings() {
        assertThat(RolloutConfig.load(ConfigFactory.empty()).toString()).isEqualTo(load().toString());
    }
}
