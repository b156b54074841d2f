package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;

class RunDirectoryTest {

    @Test
    void shouldRefuseASecondRunWithTheSameTrialNameWhileTheFirstRuns(@TempDir Path root) throws Exception {
        Path dir = root.resolve("exp/trial-1");
        try (RunDirectory first = RunDirectory.claim(dir, "trial-1", false)) {
            assertThat(first.path()).isDirectory();
            assertThatThrownBy(() -> RunDirectory.claim(dir, "trial-1", true))
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("rollout.trial_name")
                    .hasMessageContaining("is in use by another run");
        }
    }

    @Test
    void shouldRefuseTheDirectoryOfAnEarlierRunUnlessReuseIsAskedFor(@TempDir Path root) throws Exception {
        Path dir = root.resolve("exp/trial-2");
        try (RunDirectory first = RunDirectory.claim(dir, "trial-2", false)) {
            Files.writeString(dir.resolve("stats.jsonl"), "{}\n");
        }
        assertThatThrownBy(() -> RunDirectory.claim(dir, "trial-2", false))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("holds an earlier run")
                .hasMessageContaining("--reuse-run-dir");
        try (RunDirectory again = RunDirectory.claim(dir, "trial-2", true)) {
            assertThat(dir.resolve("stats.jsonl")).hasContent("{}");
        }
    }

    @Test
    void shouldTakeAnEmptyDirectoryOrOneLeftWithOnlyItsLock(@TempDir Path root) throws Exception {
        Path dir = Files.createDirectories(root.resolve("exp/trial-3"));
        try (RunDirectory first = RunDirectory.claim(dir, "trial-3", false)) {
            assertThat(dir.resolve(RunDirectory.LOCK_FILE)).content().startsWith("pid ");
        }
        try (RunDirectory again = RunDirectory.claim(dir, "trial-3", false)) {
            assertThat(again.path()).isEqualTo(dir);
        }
    }
}
