package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.load;

import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;

/** Where values come from (overrides > file > reference.conf) and how each override syntax is read. */
class RolloutConfigOverridesTest {
    @TempDir
    Path dir;

    private Path file(String hocon) throws IOException {
        Path f = dir.resolve("run.conf");
        Files.writeString(f, hocon);
        return f;
    }

    @Test
    void fileBeatsReferenceAndOverrideBeatsFile() throws IOException {
        Path f = file("""
                rollout { consumer_batch_size = 4, max_head_offpolicyness = 2 }
                gconfig.n_samples = 8
                """);
        RolloutSettings s = RolloutConfig.load(f, List.of("rollout.consumer_batch_size=16"));
        assertThat(s.rollout().consumerBatchSize()).isEqualTo(16);
        assertThat(s.rollout().maxHeadOffpolicyness()).isEqualTo(2);
        assertThat(s.gconfig().nSamples()).isEqualTo(8);
        assertThat(s.gconfig().temperature()).isEqualTo(1.0);
    }

    @Test
    void theLastOverrideOfAKeyWins() {
        assertThat(load("rollout.consumer_batch_size=2", "rollout.consumer_batch_size=3")
                        .rollout()
                        .consumerBatchSize())
                .isEqualTo(3);
    }

    @Test
    void overridesReadIntegersAndFractions() {
        RolloutSettings s = load("gconfig.max_new_tokens=512", "gconfig.temperature=0.7", "gconfig.top_p=0.95");
        assertThat(s.gconfig().maxNewTokens()).isEqualTo(512);
        assertThat(s.gconfig().temperature()).isEqualTo(0.7);
        assertThat(s.gconfig().topP()).isEqualTo(0.95);
    }

    @Test
    void overridesReadNumbersWrittenWithoutALeadingDigit() {
        RolloutSettings s = load("gconfig.top_p=.95", "gconfig.frequency_penalty=-.5", "gconfig.top_k=+40");
        assertThat(s.gconfig().topP()).isEqualTo(0.95);
        assertThat(s.gconfig().frequencyPenalty()).isEqualTo(-0.5);
        assertThat(s.gconfig().topK()).isEqualTo(40);
    }

    @Test
    void aNumberWhereAStringIsExpectedIsItsTextAsWritten() {
        assertThat(load("rollout.trial_name=007").rollout().trialName()).isEqualTo("007");
    }

    @Test
    void overridesReadBooleans() {
        RolloutSettings s = load("rollout.check_trajectory_format=true", "gconfig.skip_special_tokens=false");
        assertThat(s.rollout().checkTrajectoryFormat()).isTrue();
        assertThat(s.gconfig().skipSpecialTokens()).isFalse();
    }

    @Test
    void overridesReadNullOverAFileValue() throws IOException {
        Path f = file("rollout.max_concurrent_rollouts = 8\nrollout.consumer_batch_size = 2");
        RolloutSettings s = RolloutConfig.load(f, List.of("rollout.max_concurrent_rollouts=null"));
        assertThat(s.rollout().maxConcurrentRollouts()).isEqualTo(2);
    }

    @Test
    void overridesKeepPathsWithSlashesAsWritten() {
        RolloutSettings s = load("rollout.fileroot=/tmp/rollout-runs/a");
        assertThat(s.rollout().fileroot()).isEqualTo(Path.of("/tmp/rollout-runs/a"));
    }

    @Test
    void overridesKeepDoubleSlashesAndColonsThatHoconWouldCut() {
        RolloutSettings s = load("rollout.workflow_kwargs.url=http://127.0.0.1:8000//v1", "gconfig.lora_name=a#b");
        assertThat(s.workflowKwargs()).containsEntry("url", "http://127.0.0.1:8000//v1");
        assertThat(s.gconfig().loraName()).isEqualTo("a#b");
    }

    @Test
    void overridesReadQuotedStringsWithoutTheirQuotes() {
        assertThat(load("gconfig.lora_name=\"my lora\"").gconfig().loraName()).isEqualTo("my lora");
    }

    @Test
    void anEmptyOverrideValueIsTheEmptyString() {
        assertThat(load("rollout.trial_name=").rollout().trialName()).isEmpty();
    }

    @Test
    void overridesReadHoconLists() {
        RolloutSettings s = load(
                "rollout.servers=[\"127.0.0.1:30000\", \"127.0.0.1:30001\"]",
                "gconfig.stop_token_ids=[1, 2]",
                "gconfig.stop=[\"</answer>\"]");
        assertThat(s.servers())
                .containsExactly(ServerAddress.parse("127.0.0.1:30000"), ServerAddress.parse("127.0.0.1:30001"));
        assertThat(s.gconfig().stopTokenIds()).containsExactly(1, 2);
        assertThat(s.gconfig().stop()).containsExactly("</answer>");
    }

    @Test
    void overridesReadListsWhoseQuotesTheShellRemoved() {
        RolloutSettings s = load("rollout.servers=[127.0.0.1:30000, 127.0.0.1:30001]", "gconfig.stop=[</a>]");
        assertThat(s.servers())
                .containsExactly(ServerAddress.parse("127.0.0.1:30000"), ServerAddress.parse("127.0.0.1:30001"));
        assertThat(s.gconfig().stop()).containsExactly("</a>");
    }

    @Test
    void serversMayBeOneCommaSeparatedString() {
        RolloutSettings s = load("rollout.servers=127.0.0.1:30000,[::1]:30001");
        assertThat(s.servers()).containsExactly(new ServerAddress("127.0.0.1", 30000), new ServerAddress("::1", 30001));
    }

    @Test
    void overridesReadObjects() {
        RolloutSettings s = load("rollout.workflow_kwargs={max_turns = 3, name = \"x\", nested {a = [1, 2]}}");
        assertThat(s.workflowKwargs())
                .isEqualTo(Map.of("max_turns", 3, "name", "x", "nested", Map.of("a", List.of(1, 2))));
    }

    @Test
    void overridesOfNestedKeysMergeIntoTheirSection() throws IOException {
        Path f = file("rollout.workflow_kwargs { a = 1, b = 2 }");
        RolloutSettings s = RolloutConfig.load(f, List.of("rollout.workflow_kwargs.b=3"));
        assertThat(s.workflowKwargs()).isEqualTo(Map.of("a", 1, "b", 3));
    }

    @Test
    void durationsAreSecondsOrHoconDurations() {
        RolloutSettings s = load(
                "rollout.episode_timeout=0.5",
                "rollout.batch_ack_timeout=\"90s\"",
                "rollout.prepare_timeout=2 minutes");
        assertThat(s.rollout().episodeTimeout()).isEqualTo(Duration.ofMillis(500));
        assertThat(s.rollout().batchAckTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(s.rollout().prepareTimeout()).isEqualTo(Duration.ofMinutes(2));
    }

    @Test
    void aNumericStringDurationIsSecondsNotMilliseconds() {
        assertThat(ConfigFixtures.hocon("rollout.episode_timeout = \"30\"")
                        .rollout()
                        .episodeTimeout())
                .isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void stringsFromEnvironmentVariablesAreReadAsTheNumbersAndBooleansTheySpell() {
        // Typesafe Config gives values of ${?VAR} this origin; environment variables are always strings.
        RolloutSettings s = RolloutConfig.load(ConfigFactory.parseMap(
                Map.of(
                        "rollout.consumer_batch_size",
                        "8",
                        "gconfig.temperature",
                        "0.5",
                        "rollout.dump_to_file",
                        "true"),
                "env variables"));
        assertThat(s.rollout().consumerBatchSize()).isEqualTo(8);
        assertThat(s.gconfig().temperature()).isEqualTo(0.5);
        assertThat(s.rollout().dumpToFile()).isTrue();
    }

    @Test
    void fileSubstitutionsResolveAgainstTheDefaults() {
        RolloutSettings s = ConfigFixtures.hocon(
                "rollout.consumer_batch_size = 4\nrollout.max_concurrent_rollouts = ${rollout.consumer_batch_size}");
        assertThat(s.rollout().maxConcurrentRollouts()).isEqualTo(4);
    }

    @Test
    void anOverrideWithoutEqualsSignIsRefusedNamingIt() {
        assertThatThrownBy(() -> load("rollout.consumer_batch_size"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'override': \"rollout.consumer_batch_size\""
                        + " (allowed: key=value, e.g. rollout.consumer_batch_size=8)");
    }

    @Test
    void anOverrideWithAnEmptyKeyIsRefusedNamingIt() {
        assertThatThrownBy(() -> load(" =8"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'override': \" =8\""
                        + " (allowed: key=value, e.g. rollout.consumer_batch_size=8 (the key is empty))");
    }

    @Test
    void anOverrideWhoseKeyIsNoPathIsRefusedNamingIt() {
        assertThatThrownBy(() -> load("rollout..x=1"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'override': \"rollout..x=1\""
                        + " (allowed: key=value, e.g. rollout.consumer_batch_size=8 (the key is not a HOCON path))");
    }

    @Test
    void aMissingFileIsRefusedNamingIt() {
        Path missing = dir.resolve("nope.conf");
        assertThatThrownBy(() -> RolloutConfig.load(missing, List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'config file': \"" + missing
                        + "\" (allowed: an existing, readable HOCON file)");
    }

    @Test
    void aFileThatIsNotHoconIsRefusedWithTheParserMessage() throws IOException {
        Path f = file("rollout { consumer_batch_size = 4");
        assertThatThrownBy(() -> RolloutConfig.load(f, List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'config file': \"" + f + "\" (allowed: valid HOCON (")
                .hasMessageContaining("run.conf: 1");
    }

    @Test
    void anUnresolvableSubstitutionIsRefusedWithWhereItIs() {
        assertThatThrownBy(() -> ConfigFixtures.hocon("rollout.trial_name = ${nowhere}"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'config': ")
                .hasMessageContaining("${nowhere}");
    }
}
