package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Servers in one JVM share the read of an unchanged weight file, and never a stale or failed one. */
class WeightFileCacheTest {
    @TempDir
    Path dir;

    @AfterEach
    void tearDown() {
        WeightFileCache.clear();
    }

    @Test
    void anUnchangedFileIsReadOnceAndShared() throws Exception {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights.seeded(1).withVersion(3).write(file);

        TinyLmWeights first = WeightFileCache.read(file);
        TinyLmWeights second = WeightFileCache.read(dir.resolve(".").resolve("w.rlm"));

        assertThat(second).isSameAs(first);
        assertThat(first).isEqualTo(TinyLmWeights.read(file));
    }

    @Test
    void aFileWrittenAgainAtTheSamePathIsReadAgain() throws Exception {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights.seeded(1).withVersion(3).write(file);
        TinyLmWeights before = WeightFileCache.read(file);

        TinyLmWeights next = TinyLmWeights.seeded(2).withVersion(4);
        next.write(file);

        assertThat(WeightFileCache.read(file)).isEqualTo(next).isNotEqualTo(before);
    }

    @Test
    void aFileRewrittenInPlaceWithTheSameSizeIsReadAgain() throws Exception {
        Path file = dir.resolve("w.rlm");
        Path other = dir.resolve("other.rlm");
        TinyLmWeights.seeded(1).withVersion(3).write(file);
        TinyLmWeights next = TinyLmWeights.seeded(2).withVersion(4);
        next.write(other);
        WeightFileCache.read(file);

        // Same inode, same size: only the change time tells.
        Files.write(file, Files.readAllBytes(other), StandardOpenOption.TRUNCATE_EXISTING);

        assertThat(WeightFileCache.read(file)).isEqualTo(next);
    }

    @Test
    void aDefectIsReportedOnEveryLoadAndAFixedFileThenLoads() throws Exception {
        Path file = dir.resolve("w.rlm");
        Files.write(file, new byte[] {1, 2, 3});

        assertThatThrownBy(() -> WeightFileCache.read(file))
                .isInstanceOf(WeightFileException.class)
                .hasMessageContaining(file.toString());
        assertThatThrownBy(() -> WeightFileCache.read(file)).isInstanceOf(WeightFileException.class);

        TinyLmWeights good = TinyLmWeights.seeded(5).withVersion(7);
        good.write(file);
        assertThat(WeightFileCache.read(file)).isEqualTo(good);
    }
}
