package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.hocon;
import static org.rollout.config.ConfigFixtures.load;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rollout.api.InvalidConfigException;

/** Every rule a configuration must satisfy, each failing at load with the key, the value and what is allowed. */
class RolloutConfigValidationTest {
    @TempDir
    Path dir;

    private static void refused(Runnable load, String message) {
        assertThatThrownBy(load::run).isInstanceOf(InvalidConfigException.class).hasMessage(message);
    }

    // ---- unknown keys ----

    @Test
    void anUnknownKeyIsRefusedWithTheClosestKnownKey() {
        refused(
                () -> load("rollout.consumer_batch_sise=8"),
                "invalid value for 'rollout.consumer_batch_sise': 8"
                        + " (allowed: no such key; did you mean rollout.consumer_batch_size?)");
    }

    @Test
    void aKeyInTheWrongSectionIsRefusedNamingTheRightOne() {
        refused(
                () -> load("rollout.n_samples=4"),
                "invalid value for 'rollout.n_samples': 4 (allowed: no such key; did you mean gconfig.n_samples?)");
    }

    @Test
    void aKeySpeltWithDashesIsRefusedNamingTheUnderscoredOne() {
        refused(
                () -> load("rollout.max-head-offpolicyness=2"),
                "invalid value for 'rollout.max-head-offpolicyness': 2"
                        + " (allowed: no such key; did you mean rollout.max_head_offpolicyness?)");
    }

    @Test
    void anUnknownKeyFarFromEveryKnownOneIsRefusedPointingToTheDocs() {
        refused(
                () -> load("rollout.banana=1"),
                "invalid value for 'rollout.banana': 1"
                        + " (allowed: no such key under rollout (every key is listed in docs/configuration.md))");
    }

    @Test
    void anUnknownKeyInANestedSectionIsRefusedWithItsFullPath() {
        refused(
                () -> load("rollout.dataset.trian=[]"),
                "invalid value for 'rollout.dataset.trian': [] (allowed: no such key; did you mean rollout.dataset.train?)");
    }

    @Test
    void anUnknownEvalGconfigKeyIsRefusedNamingTheEvalGconfigKey() {
        refused(
                () -> load("eval_gconfig.temprature=0.5"),
                "invalid value for 'eval_gconfig.temprature': 0.5"
                        + " (allowed: no such key; did you mean eval_gconfig.temperature?)");
    }

    @Test
    void anUnknownSectionIsRefusedWithTheClosestSection() {
        refused(
                () -> load("gconfg.n_samples=4"),
                "invalid value for 'gconfg': {\"n_samples\":4} (allowed: no such section; did you mean gconfig?)");
    }

    @Test
    void anUnknownSectionFarFromEveryKnownOneIsRefusedListingTheSections() {
        refused(
                () -> load("trainer.lr=0.1"),
                "invalid value for 'trainer': {\"lr\":0.1} (allowed: no such section; did you mean one of rollout,"
                        + " gconfig, eval_gconfig, actor, pekko?)");
    }

    @Test
    void thePekkoSectionIsLeftToPekko() {
        assertThat(load("pekko.loglevel=DEBUG").config().getString("pekko.loglevel"))
                .isEqualTo("DEBUG");
    }

    @Test
    void anArealKnobThisEngineDoesNotHaveIsRefusedSayingSo() {
        refused(
                () -> load("rollout.return_routed_experts=true"),
                "invalid value for 'rollout.return_routed_experts': true"
                        + " (allowed: no such key: AReaL's rollout.return_routed_experts is not supported here (MoE"
                        + " routed experts are not returned))");
    }

    @Test
    void anAgentKeyThisEngineDoesNotHaveIsRefusedNamingIt() {
        assertThatThrownBy(() -> load("rollout.agent.pool_size=2"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("rollout.agent.pool_size");
    }

    @Test
    void aTrainerSettingUnderActorIsRefusedSayingWhatTheEngineReads() {
        refused(
                () -> load("actor.reward_scaling=2.0"),
                "invalid value for 'actor.reward_scaling': 2 (allowed: no such key: the engine reads only"
                        + " actor.min_usable_group_size and the mean_level and std_level of actor.reward_norm and"
                        + " actor.adv_norm; the trainer's other settings do not belong here)");
    }

    @Test
    void aNormGivenAsAWordIsRefusedSayingItIsASection() {
        refused(
                () -> load("actor.reward_norm=group"),
                "invalid value for 'actor.reward_norm': \"group\""
                        + " (allowed: an object (the section actor.reward_norm), or null)");
    }

    @Test
    void severalUnknownKeysAreReportedInAlphabeticalOrder() {
        assertThatThrownBy(() -> load("rollout.zebra=1", "rollout.aardvark=2"))
                .isInstanceOfSatisfying(
                        ConfigErrors.class,
                        e -> assertThat(e.keys()).containsExactly("rollout.aardvark", "rollout.zebra"));
    }

    @Test
    void aSectionGivenAsAValueIsRefused() {
        refused(
                () -> load("rollout.dataset=5"),
                "invalid value for 'rollout.dataset': 5 (allowed: an object (the section rollout.dataset))");
    }

    // ---- wrong types ----

    @Test
    void aStringWhereANumberIsExpectedIsRefused() {
        refused(
                () -> hocon("rollout.consumer_batch_size = \"8\""),
                "invalid value for 'rollout.consumer_batch_size': \"8\" (allowed: an integer >= 1)");
    }

    @Test
    void aFractionWhereAnIntegerIsExpectedIsRefused() {
        refused(
                () -> load("gconfig.n_samples=2.5"),
                "invalid value for 'gconfig.n_samples': 2.5 (allowed: an integer >= 1)");
    }

    @Test
    void aListWhereAStringIsExpectedIsRefused() {
        refused(
                () -> load("rollout.workflow=[rlvr]"),
                "invalid value for 'rollout.workflow': [\"rlvr\"] (allowed: a built-in workflow name (rlvr,"
                        + " multi_turn, demo), a class name (pkg.Class, pkg.Class.FIELD or pkg.Class#FIELD), or a Python"
                        + " class (python:pkg.module:Class))");
    }

    @Test
    void nullWhereNoNullIsAllowedIsRefused() {
        refused(
                () -> load("gconfig.temperature=null"),
                "invalid value for 'gconfig.temperature': null (allowed: a finite number >= 0)");
    }

    @Test
    void aWordWhereABooleanIsExpectedIsRefused() {
        refused(
                () -> load("rollout.dump_to_file=yes"),
                "invalid value for 'rollout.dump_to_file': \"yes\" (allowed: true or false)");
    }

    @Test
    void aWordWhereADurationIsExpectedIsRefused() {
        refused(
                () -> load("rollout.episode_timeout=soon"),
                "invalid value for 'rollout.episode_timeout': \"soon\" (allowed: a number of seconds > 0)");
    }

    @Test
    void aNumberWhereAListIsExpectedIsRefused() {
        refused(
                () -> load("gconfig.stop_token_ids=7"),
                "invalid value for 'gconfig.stop_token_ids': 7 (allowed: a list of token ids >= 0)");
    }

    @Test
    void aStringWhereKwargsAreExpectedIsRefused() {
        refused(
                () -> load("rollout.workflow_kwargs=none"),
                "invalid value for 'rollout.workflow_kwargs': \"none\" (allowed: an object of keyword arguments, {}"
                        + " for none)");
    }

    // ---- ranges and values of the rollout section ----

    @Test
    void consumerBatchSizeBelowOneIsRefused() {
        refused(
                () -> load("rollout.consumer_batch_size=0"),
                "invalid value for 'rollout.consumer_batch_size': 0 (allowed: an integer >= 1)");
    }

    @Test
    void maxConcurrentRolloutsBelowOneIsRefused() {
        refused(
                () -> load("rollout.max_concurrent_rollouts=0"),
                "invalid value for 'rollout.max_concurrent_rollouts': 0"
                        + " (allowed: an integer >= 1, or null for consumer_batch_size)");
    }

    @Test
    void negativeMaxHeadOffpolicynessIsRefused() {
        refused(
                () -> load("rollout.max_head_offpolicyness=-1"),
                "invalid value for 'rollout.max_head_offpolicyness': -1 (allowed: an integer >= 0)");
    }

    @Test
    void aQueueSmallerThanABatchIsRefused() {
        refused(
                () -> load("rollout.consumer_batch_size=8", "rollout.queue_size=4"),
                "invalid value for 'rollout.queue_size': 4"
                        + " (allowed: an integer >= consumer_batch_size (8), or null for max_concurrent_rollouts × 16)");
    }

    @Test
    void dataParallelRanksThatDoNotDivideTheBatchOrAreOutOfRangeAreRefused() {
        refused(
                () -> load("rollout.consumer_batch_size=8", "rollout.train_data_parallel_size=3"),
                "invalid value for 'rollout.train_data_parallel_size': 3 (allowed: a divisor of"
                        + " rollout.consumer_batch_size (8): each rank pulls batches of consumer_batch_size /"
                        + " train_data_parallel_size groups)");
        refused(
                () -> load("rollout.consumer_batch_size=512", "rollout.train_data_parallel_size=512"),
                "invalid value for 'rollout.train_data_parallel_size': 512 (allowed: an integer from 1 to 256)");
        assertThat(load("rollout.consumer_batch_size=8", "rollout.train_data_parallel_size=4")
                        .rollout()
                        .trainDataParallelSize())
                .isEqualTo(4);
        assertThat(load().rollout().trainDataParallelSize()).isEqualTo(1);
    }

    @Test
    void nodeCapacityBelowOneIsRefused() {
        refused(
                () -> load("rollout.node_capacity=0"),
                "invalid value for 'rollout.node_capacity': 0"
                        + " (allowed: an integer >= 1, or null for max_concurrent_rollouts)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"episode_timeout", "batch_ack_timeout", "weight_update_timeout", "prepare_timeout"})
    void aTimeoutOfZeroIsRefused(String key) {
        refused(
                () -> load("rollout." + key + "=0"),
                "invalid value for 'rollout." + key + "': 0 (allowed: a number of seconds > 0)");
    }

    @Test
    void negativeEvalEveryIsRefused() {
        refused(
                () -> load("rollout.eval_every=-1"),
                "invalid value for 'rollout.eval_every': -1 (allowed: an integer >= 0 (0: one pass at start))");
    }

    @Test
    void evalMaxConcurrentBelowOneIsRefused() {
        refused(
                () -> load("rollout.eval_max_concurrent=0"),
                "invalid value for 'rollout.eval_max_concurrent': 0"
                        + " (allowed: an integer >= 1, or null for max_concurrent_rollouts)");
    }

    @Test
    void anUnknownStalenessPolicyIsRefused() {
        refused(
                () -> load("rollout.staleness_policy=drop"),
                "invalid value for 'rollout.staleness_policy': \"drop\" (allowed: \"admission\" or \"cancel\")");
    }

    @Test
    void anAcceptThatIsNeitherAKeywordNorAQualifiedClassIsRefused() {
        refused(
                () -> load("rollout.accept=drop_equal"),
                "invalid value for 'rollout.accept': \"drop_equal\" (allowed: \"all\", \"drop_equal_rewards\", or the"
                        + " fully qualified name of an AcceptFilter class (pkg.Class, pkg.Class.FIELD or"
                        + " pkg.Class#FIELD))");
    }

    @Test
    void anAcceptClassNameIsCarriedUnresolved() {
        assertThat(load("rollout.accept=com.example.Filters#NON_EMPTY").acceptSpec())
                .isEqualTo("com.example.Filters#NON_EMPTY");
    }

    @Test
    void aWorkflowWithSpacesIsRefused() {
        refused(
                () -> load("rollout.workflow=my workflow"),
                "invalid value for 'rollout.workflow': \"my workflow\" (allowed: a built-in workflow name (rlvr,"
                        + " multi_turn, demo), a class name (pkg.Class, pkg.Class.FIELD or pkg.Class#FIELD), or a Python"
                        + " class (python:pkg.module:Class))");
    }

    @Test
    void anUnknownOnMalformedIsRefused() {
        refused(
                () -> load("rollout.dataset.on_malformed=ignore"),
                "invalid value for 'rollout.dataset.on_malformed': \"ignore\" (allowed: \"skip\" or \"fail\")");
    }

    @Test
    void aMissingDatasetFileIsRefusedNamingIt() {
        Path missing = dir.resolve("train.jsonl");
        refused(
                () -> load("rollout.dataset.train=[\"" + missing + "\"]"),
                "invalid value for 'rollout.dataset.train': \"" + missing
                        + "\" (allowed: a list of existing, readable JSONL files (a single path is a list of one))");
    }

    @Test
    void aMissingTokenizerPathIsRefused() {
        Path missing = dir.resolve("qwen");
        refused(
                () -> load("rollout.tokenizer_path=" + missing),
                "invalid value for 'rollout.tokenizer_path': \"" + missing + "\" (allowed: \"\" for the built-in"
                        + " byte-level tokenizer, or an existing Hugging Face tokenizer directory or tokenizer.json file)");
    }

    @Test
    void anExperimentNameWithASlashIsRefused() {
        refused(
                () -> load("rollout.experiment_name=a/b"),
                "invalid value for 'rollout.experiment_name': \"a/b\""
                        + " (allowed: a single directory name (no '/', '\\', '.' or '..'))");
    }

    @Test
    void dumpingWithABlankTrialNameIsRefused() {
        refused(
                () -> load("rollout.dump_to_file=true", "rollout.trial_name=\"\""),
                "invalid value for 'rollout.trial_name': \"\" (allowed: a non-blank single directory name (no '/',"
                        + " '\\', '.' or '..') while rollout.dump_to_file is true)");
    }

    @Test
    void dumpingWithABlankFilerootIsRefused() {
        refused(
                () -> load("rollout.dump_to_file=true", "rollout.fileroot=\" \""),
                "invalid value for 'rollout.fileroot': \" \" (allowed: a non-blank path while rollout.dump_to_file is"
                        + " true)");
    }

    @Test
    void aBlankTrialNameIsAllowedWithoutDumping() {
        assertThat(load("rollout.trial_name=\"\"").runDirectory()).isEmpty();
    }

    // ---- inference keys (InferenceConfig's rules, keyed under rollout) ----

    @Test
    void inferenceRulesAreReportedUnderRollout() {
        refused(
                () -> load("rollout.request_retries=0"),
                "invalid value for 'rollout.request_retries': 0 (allowed: an integer >= 1 (total attempts))");
    }

    @Test
    void loraNeedsAdaptersLoadedFromAPathAndAName() {
        refused(
                () -> load("rollout.use_lora=true", "rollout.weight_transfer=http"),
                "invalid value for 'rollout.weight_transfer': http (allowed: disk with use_lora = true (adapters are"
                        + " loaded from a path))");
        refused(
                () -> load("rollout.lora_name=\"my adapter\""),
                "invalid value for 'rollout.lora_name': \"my adapter\" (allowed: a non-blank name without blanks)");
        assertThat(load("rollout.use_lora=true", "rollout.lora_name=policy", "rollout.servers=127.0.0.1:30000")
                        .inferenceConfig()
                        .loraAdapter(3))
                .isEqualTo("policy-v3");
    }

    @Test
    void ncclUpdatesNeedTheGroupsMasterAndAcceptAReal() {
        refused(
                () -> load("rollout.weight_transfer=nccl"),
                "invalid value for 'rollout.nccl_master_address': null (allowed: the host of the trainer's rank 0 (the"
                        + " group's master) with weight_transfer = nccl)");
        refused(
                () -> load("rollout.weight_transfer=nccl", "rollout.nccl_master_address=10.0.0.2"),
                "invalid value for 'rollout.nccl_master_port': 0 (allowed: a port in 1..65535 with weight_transfer"
                        + " = nccl)");
        InferenceConfig c = load(
                        "rollout.weight_transfer=xccl",
                        "rollout.nccl_master_address=10.0.0.2",
                        "rollout.nccl_master_port=29500",
                        "rollout.servers=127.0.0.1:30000")
                .inferenceConfig();
        assertThat(c.weightTransfer()).isEqualTo(WeightTransfer.NCCL);
        assertThat(c.ncclGroupName()).isEqualTo("update_weight_group");
        refused(
                () -> load("rollout.shared_disk_servers=everyone"),
                "invalid value for 'rollout.shared_disk_servers': \"everyone\" (allowed: launched, local or none)");
    }

    @Test
    void deterministicSamplingTakesOnlyABoolean() {
        refused(
                () -> load("rollout.deterministic_sampling=sometimes"),
                "invalid value for 'rollout.deterministic_sampling': \"sometimes\" (allowed: true or false)");
    }

    @Test
    void aNegativeInferenceDurationIsRefusedWithInferenceConfigsRule() {
        refused(
                () -> load("rollout.pause_grace_period=-1"),
                "invalid value for 'rollout.pause_grace_period': -1.0 (allowed: a number of seconds >= 0)");
    }

    @Test
    void anUnknownBackendIsRefused() {
        refused(
                () -> load("rollout.backend=tgi"),
                "invalid value for 'rollout.backend': \"tgi\" (allowed: sglang or vllm, optionally with an allocation"
                        + " suffix such as sglang:d4 or vllm:d2t4)");
    }

    @Test
    void anUnknownRoutingStrategyIsRefused() {
        refused(
                () -> load("rollout.routing_strategy=random"),
                "invalid value for 'rollout.routing_strategy': \"random\" (allowed: least_requests, round_robin, group_affinity or prefix_aware)");
    }

    @Test
    void aServerWithoutPortIsRefusedUnderServers() {
        refused(
                () -> load("rollout.servers=[\"localhost\"]"),
                "invalid value for 'rollout.servers': \"localhost\""
                        + " (allowed: host:port, e.g. 127.0.0.1:30000 or [::1]:30000)");
    }

    @Test
    void duplicateServersAreRefused() {
        refused(
                () -> load("rollout.servers=127.0.0.1:30000,127.0.0.1:30000"),
                "invalid value for 'rollout.servers': [127.0.0.1:30000, 127.0.0.1:30000] (allowed: no duplicates)");
    }

    @Test
    void aBackoffCapBelowTheFirstBackoffIsRefusedOnce() {
        refused(
                () -> load("rollout.retry_backoff_initial=20", "rollout.retry_backoff_max=5"),
                "invalid value for 'rollout.retry_backoff_max': 5.0"
                        + " (allowed: a number of seconds >= retry_backoff_initial (20.0))");
    }

    @Test
    void aLargeFirstBackoffAgainstTheDefaultCapIsRefusedOnceUnderTheCap() {
        refused(
                () -> load("rollout.retry_backoff_initial=20"),
                "invalid value for 'rollout.retry_backoff_max': 10.0"
                        + " (allowed: a number of seconds >= retry_backoff_initial (20.0))");
    }

    // ---- gconfig and eval_gconfig (GenerationConfig's rules, keyed under their section) ----

    @Test
    void generationRulesAreReportedUnderGconfig() {
        refused(
                () -> load("gconfig.top_p=1.5"),
                "invalid value for 'gconfig.top_p': 1.5 (allowed: a number in (0, 1])");
    }

    @Test
    void generationRulesAreReportedUnderEvalGconfig() {
        refused(
                () -> load("eval_gconfig.top_k=0"),
                "invalid value for 'eval_gconfig.top_k': 0 (allowed: an integer >= 1, or -1 for no limit)");
    }

    @Test
    void minNewTokensAboveMaxNewTokensIsRefused() {
        refused(
                () -> load("gconfig.max_new_tokens=10", "gconfig.min_new_tokens=20"),
                "invalid value for 'gconfig.min_new_tokens': 20 (allowed: an integer in [0, max_new_tokens=10])");
    }

    @Test
    void anEvalValueThatBreaksARuleWithAnInheritedOneNamesTheInheritance() {
        refused(
                () -> load("gconfig.min_new_tokens=50", "eval_gconfig.max_new_tokens=10"),
                "invalid value for 'eval_gconfig.min_new_tokens': 50 (allowed: an integer in [0, max_new_tokens=10];"
                        + " the value is gconfig.min_new_tokens's, as eval_gconfig does not set it)");
    }

    @Test
    void aWrongGconfigValueIsReportedOnceThoughEvalGconfigInheritsIt() {
        refused(
                () -> load("gconfig.temperature=-1"),
                "invalid value for 'gconfig.temperature': -1.0 (allowed: a finite number >= 0)");
    }

    @Test
    void beamSearchWithSglangIsRefused() {
        refused(
                () -> load("gconfig.use_beam_search=true"),
                "invalid value for 'gconfig.use_beam_search': true"
                        + " (allowed: false with rollout.backend = sglang (SGLang does not implement beam search))");
    }

    @Test
    void beamSearchWithVllmIsAllowed() {
        assertThat(load("gconfig.use_beam_search=true", "rollout.backend=vllm")
                        .gconfig()
                        .useBeamSearch())
                .isTrue();
    }

    @Test
    void evalBeamSearchWithSglangIsRefusedUnderEvalGconfig() {
        refused(
                () -> load("eval_gconfig.use_beam_search=true"),
                "invalid value for 'eval_gconfig.use_beam_search': true"
                        + " (allowed: false with rollout.backend = sglang (SGLang does not implement beam search))");
    }

    // ---- actor and min_usable_group_size (semantics §5.4) ----

    @Test
    void minUsableGroupSizeAboveNSamplesIsRefused() {
        refused(
                () -> load("gconfig.n_samples=4", "actor.min_usable_group_size=5"),
                "invalid value for 'actor.min_usable_group_size': 5"
                        + " (allowed: an integer <= n_samples (4), the group size)");
    }

    @Test
    void minUsableGroupSizeBelowOneIsRefused() {
        refused(
                () -> load("actor.min_usable_group_size=0"),
                "invalid value for 'actor.min_usable_group_size': 0 (allowed: an integer >= 1)");
    }

    @Test
    void minUsableGroupSizeOfOneUnderGroupAdvantagesIsRefused() {
        refused(
                () -> load("gconfig.n_samples=4", "actor.adv_norm.mean_level=group", "actor.min_usable_group_size=1"),
                "invalid value for 'actor.min_usable_group_size': 1 (allowed: an integer >= 2, because"
                        + " min_usable_group_size must be at least 2 while group statistics are in use (group-level"
                        + " actor.reward_norm or actor.adv_norm, or gconfig.reward_normalization): a lone survivor has"
                        + " no peers)");
    }

    @Test
    void minUsableGroupSizeOfOneUnderRolloutRewardNormalizationIsRefused() {
        assertThatThrownBy(() -> load(
                        "gconfig.n_samples=4", "gconfig.reward_normalization=true", "actor.min_usable_group_size=1"))
                .isInstanceOf(InvalidConfigException.class)
                .extracting(e -> ((InvalidConfigException) e).key())
                .isEqualTo("actor.min_usable_group_size");
    }

    @Test
    void rolloutRewardNormalizationTogetherWithTrainerRewardNormIsRefused() {
        refused(
                () -> load(
                        "gconfig.n_samples=4",
                        "gconfig.reward_normalization=true",
                        "actor.reward_norm.mean_level=group"),
                "invalid value for 'gconfig.reward_normalization': true (allowed: false while actor.reward_norm is set"
                        + " (mean_level=\"group\", std_level=null): normalise rewards at rollout time or in the trainer,"
                        + " not both (AReaL: enable only one))");
    }

    @Test
    void anUnknownNormLevelIsRefused() {
        refused(
                () -> load("actor.reward_norm.std_level=token"),
                "invalid value for 'actor.reward_norm.std_level': \"token\" (allowed: \"batch\", \"group\" or null)");
    }

    @Test
    void aFractionalMinUsableGroupSizeIsRefused() {
        refused(
                () -> load("actor.min_usable_group_size=1.5"),
                "invalid value for 'actor.min_usable_group_size': 1.5"
                        + " (allowed: an integer in [1, gconfig.n_samples], or null to derive it)");
    }

    // ---- several at once ----

    @Test
    void severalErrorsAreReportedTogetherInTheOrderOfTheKeys() {
        assertThatThrownBy(() -> load(
                        "rollout.consumer_batch_size=0",
                        "gconfig.top_p=2",
                        "rollout.consumer_batch_sise=8",
                        "actor.reward_norm.mean_level=grup"))
                .isInstanceOf(ConfigErrors.class)
                .hasMessage("""
                        4 configuration errors:
                          invalid value for 'rollout.consumer_batch_sise': 8 (allowed: no such key; did you mean\
                         rollout.consumer_batch_size?)
                          invalid value for 'rollout.consumer_batch_size': 0 (allowed: an integer >= 1)
                          invalid value for 'gconfig.top_p': 2.0 (allowed: a number in (0, 1])
                          invalid value for 'actor.reward_norm.mean_level': "grup" (allowed: "batch", "group" or\
                         null)""");
    }

    @Test
    void configErrorsListEachErrorWithItsKey() {
        assertThatThrownBy(() -> load("rollout.consumer_batch_size=0", "gconfig.n_samples=0"))
                .isInstanceOfSatisfying(
                        ConfigErrors.class,
                        e -> assertThat(e.keys()).containsExactly("rollout.consumer_batch_size", "gconfig.n_samples"));
    }

    @Test
    void malformedOverridesAreReportedTogether() {
        assertThatThrownBy(() -> load("a", "=1"))
                .isInstanceOfSatisfying(
                        ConfigErrors.class, e -> assertThat(e.keys()).containsExactly("override", "override"));
    }

    // ---- warnings: legal, but worth a line at start-up ----

    @Test
    void fewerConcurrentRolloutsThanABatchIsAWarning() {
        assertThat(load("rollout.consumer_batch_size=8", "rollout.max_concurrent_rollouts=2")
                        .warnings())
                .containsExactly("rollout.max_concurrent_rollouts = 2 is below rollout.consumer_batch_size = 8: fewer"
                        + " groups run at once than a batch holds, so every batch takes several rounds of generation");
    }

    @Test
    void evalEveryWithoutAnEvalDatasetIsAWarning() {
        assertThat(load("rollout.eval_every=5").warnings())
                .containsExactly("rollout.eval_every = 5 has no effect: rollout.dataset.eval is empty");
    }

    @Test
    void cancellingWithZeroOffpolicynessIsAWarning() {
        assertThat(load("rollout.staleness_policy=cancel").warnings())
                .containsExactly("rollout.staleness_policy = cancel with rollout.max_head_offpolicyness = 0 cancels"
                        + " every group still running when a new weight version is published");
    }

    @Test
    void aFixedSeedForAGroupIsAWarning() {
        assertThat(load("gconfig.n_samples=4", "gconfig.seed=7").warnings())
                .containsExactly("gconfig.seed = 7 with gconfig.n_samples = 4: every slot of a group sends the same"
                        + " seed, so a group's samples are alike and its group-relative advantages vanish");
        assertThat(load("gconfig.n_samples=4", "gconfig.seed=7", "rollout.deterministic_sampling=true")
                        .warnings())
                .as("under deterministic_sampling the seed is the base of per-slot seeds")
                .isEmpty();
    }

    @Test
    void greedyGroupsAreAWarning() {
        assertThat(load("gconfig.n_samples=2", "gconfig.greedy=true").warnings())
                .containsExactly("gconfig.greedy = true with gconfig.n_samples = 2: a group's samples are identical"
                        + " and its group-relative advantages vanish");
    }

    @Test
    void minNewTokensIsAWarningBecauseNoBackendSendsIt() {
        assertThat(load("gconfig.min_new_tokens=4").warnings())
                .containsExactly("gconfig.min_new_tokens = 4 has no effect: it is not sent to SGLang or vLLM (as in"
                        + " AReaL)");
    }

    @Test
    void rewardNormalizationOfSingletonGroupsIsAWarning() {
        assertThat(load("gconfig.reward_normalization=true").warnings())
                .containsExactly("gconfig.reward_normalization = true has no effect with gconfig.n_samples = 1");
    }

    @Test
    void anExplicitMinimumUnderDropIncompleteGroupIsAWarning() {
        assertThat(load("gconfig.n_samples=4", "gconfig.drop_incomplete_group=true", "actor.min_usable_group_size=2")
                        .warnings())
                .containsExactly("actor.min_usable_group_size = 2 has no effect: gconfig.drop_incomplete_group = true"
                        + " drops every incomplete group");
    }

    @Test
    void evalGroupFlagsAreAWarningBecauseEvaluationIgnoresThem() {
        assertThat(load("eval_gconfig.drop_incomplete_group=true").warnings())
                .containsExactly("eval_gconfig.drop_incomplete_group = true is ignored: evaluation groups must be"
                        + " complete and are never reward-normalised");
    }

    @Test
    void aDatasetGivenAsOnePathIsAListOfOne() throws IOException {
        Path train = Files.writeString(dir.resolve("train.jsonl"), "{\"prompt\": \"1+1\"}\n");
        assertThat(load("rollout.dataset.train=" + train).dataset().train()).containsExactly(train);
    }
}
