package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WeightFilesTest {
    @TempDir
    Path dir;

    private void write(int... versions) throws IOException {
        for (int v : versions) {
            Files.writeString(dir.resolve("v" + v + ".rlm"), "w" + v);
        }
    }

    @Test
    void keepsTheNewestFilesUpToTheServedVersionAndDeletesTheOlderOnes() throws IOException {
        write(0, 1, 2, 3, 4, 5);
        WeightFiles files = new WeightFiles(dir, 2);
        assertThat(files.prune(5)).isEqualTo(4);
        assertThat(files.versions()).containsOnlyKeys(4, 5);
        assertThat(files.removed()).isEqualTo(4);
    }

    @Test
    void neverDeletesAFileNewerThanTheVersionEveryServerServes() throws IOException {
        write(1, 2, 3, 4);
        WeightFiles files = new WeightFiles(dir, 1);
        files.prune(2);
        assertThat(files.versions()).containsOnlyKeys(2, 3, 4);
    }

    @Test
    void keepingOneKeepsTheCurrentVersion() throws IOException {
        write(7, 8);
        WeightFiles files = new WeightFiles(dir, 1);
        files.prune(8);
        assertThat(files.versions()).containsOnlyKeys(8);
    }

    @Test
    void otherFilesInTheDirectoryAreLeftAlone() throws IOException {
        write(1, 2, 3);
        Files.writeString(dir.resolve("v1.rlm.tmp"), "partial");
        Files.writeString(dir.resolve("notes.txt"), "mine");
        new WeightFiles(dir, 1).prune(3);
        assertThat(dir.resolve("v1.rlm.tmp")).exists();
        assertThat(dir.resolve("notes.txt")).exists();
    }

    @Test
    void theSummaryLineSaysWhichAreKeptHowManyWereDeletedAndTheKey() throws IOException {
        write(0, 1, 2, 3);
        WeightFiles files = new WeightFiles(dir, 2);
        files.prune(3);
        assertThat(files.summaryLine())
                .contains("kept: 2 (v2..v3)", "2 older deleted", "rollout.local.keep_weights = 2");
    }
}
