package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TinyLmWeightsTest {
    @TempDir
    Path dir;

    @Test
    void sameSeedGivesIdenticalWeightsAndOtherSeedsDiffer() {
        assertThat(TinyLmWeights.seeded(7)).isEqualTo(TinyLmWeights.seeded(7));
        assertThat(TinyLmWeights.seeded(7)).isNotEqualTo(TinyLmWeights.seeded(8));
    }

    @Test
    void seededWeightsHaveTheRequestedSpread() {
        float[] c = TinyLmWeights.seeded(3).contextArray();
        double sq = 0;
        for (float v : c) {
            sq += v * v;
        }
        double std = Math.sqrt(sq / c.length);
        assertThat(std).isBetween(0.0195, 0.0205);
        assertThat(TinyLmWeights.seeded(3).decay()).isEqualTo(0.85f);
        assertThat(TinyLmWeights.seeded(3).version()).isZero();
    }

    @Test
    void writeThenReadGivesIdenticalWeightsAndVersion() throws IOException {
        TinyLmWeights w = TinyLmWeights.seeded(11, 0.5, 0.7f).withVersion(42);
        Path file = dir.resolve("sub/w.rlm");
        w.write(file);
        TinyLmWeights back = TinyLmWeights.read(file);
        assertThat(back).isEqualTo(w);
        assertThat(back.version()).isEqualTo(42);
        assertThat(back.decay()).isEqualTo(0.7f);
        assertThat(Files.size(file)).isEqualTo(TinyLmWeights.fileSize()).isEqualTo(28 + 4 * 263 + 8 * 263 * 263);
    }

    @Test
    void writeReplacesAnExistingFileAndLeavesNoTemporaryFile() throws IOException {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights.seeded(1).write(file);
        TinyLmWeights.seeded(2).withVersion(5).write(file);
        assertThat(TinyLmWeights.read(file)).isEqualTo(TinyLmWeights.seeded(2).withVersion(5));
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("w.rlm");
        }
    }

    @Test
    void headerFieldsSitAtTheDocumentedOffsets() throws IOException {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights w = TinyLmWeights.seeded(9).withVersion(3);
        w.write(file);
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new String(Arrays.copyOf(b.array(), 8), java.nio.charset.StandardCharsets.US_ASCII))
                .isEqualTo("RLTINYLM");
        assertThat(b.getInt(8)).isEqualTo(1);
        assertThat(b.getInt(12)).isEqualTo(263);
        assertThat(b.getFloat(16)).isEqualTo(0.85f);
        assertThat(b.getInt(20)).isEqualTo(3);
        assertThat(b.getFloat(24)).isEqualTo(w.bias(0));
        assertThat(b.getFloat(24 + 4 * 263 + 4 * (5 * 263 + 7))).isEqualTo(w.bigram(5, 7));
        assertThat(b.getFloat(24 + 4 * 263 + 4 * 263 * 263 + 4 * (9 * 263 + 2))).isEqualTo(w.context(9, 2));
    }

    private Path validFile() throws IOException {
        Path file = dir.resolve("w.rlm");
        TinyLmWeights.seeded(5).write(file);
        return file;
    }

    /** Rewrites the CRC so that only the intended defect remains. */
    private static void fixCrc(byte[] bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 4);
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(bytes.length - 4, (int) crc.getValue());
    }

    @Test
    void rejectsWrongMagicNamingPath() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        bytes[0] = 'X';
        Files.write(file, bytes);
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .isInstanceOf(WeightFileException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("wrong magic");
    }

    @Test
    void rejectsUnsupportedFormatVersion() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 2);
        fixCrc(bytes);
        Files.write(file, bytes);
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("unsupported format version 2");
    }

    @Test
    void rejectsWrongVocabularySize() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(12, 300);
        Files.write(file, bytes);
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("V=300, expected 263");
    }

    @Test
    void rejectsTruncatedFile() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(bytes, bytes.length - 100));
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("truncated: " + (bytes.length - 100) + " bytes, expected " + bytes.length);
    }

    @Test
    void rejectsFileShorterThanItsHeader() throws IOException {
        Path file = dir.resolve("tiny.rlm");
        Files.write(file, new byte[] {'R', 'L', 'T', 'I', 'N', 'Y', 'L', 'M', 1, 0});
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("shorter than the 24-byte header");
    }

    @Test
    void rejectsTrailingBytes() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(bytes, bytes.length + 3));
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("trailing bytes");
    }

    @Test
    void rejectsBadCrc() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        bytes[1000] ^= 0x01;
        Files.write(file, bytes);
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .isInstanceOf(WeightFileException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("CRC32 mismatch");
    }

    @Test
    void rejectsNonFiniteWeightNamingItsIndex() throws IOException {
        Path file = validFile();
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putFloat(24 + 4 * 10, Float.NaN);
        fixCrc(bytes);
        Files.write(file, bytes);
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .hasMessageContaining(file.toString())
                .hasMessageContaining("b[10] is not finite");
    }

    @Test
    void rejectsMissingFileNamingPath() {
        Path file = dir.resolve("absent.rlm");
        assertThatThrownBy(() -> TinyLmWeights.read(file))
                .isInstanceOf(WeightFileException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("cannot read");
    }

    @Test
    void explicitArraysAreCopiedAndValidated() {
        float[] b = new float[263];
        float[] p = new float[263 * 263];
        float[] c = new float[263 * 263];
        TinyLmWeights w = TinyLmWeights.of(1, 0.5f, b, p, c);
        b[0] = 9f;
        assertThat(w.bias(0)).isZero();
        p[3] = Float.POSITIVE_INFINITY;
        assertThatThrownBy(() -> TinyLmWeights.of(1, 0.5f, b, p, c)).hasMessageContaining("bigram[3] is not finite");
        assertThatThrownBy(() -> TinyLmWeights.of(1, 0.5f, new float[5], c, c))
                .hasMessageContaining("bias must have length 263, got 5");
        assertThatThrownBy(() -> TinyLmWeights.of(-1, 0.5f, new float[263], c, c))
                .hasMessageContaining("weight version must be >= 0");
        assertThatThrownBy(() -> TinyLmWeights.seeded(1, 0.02, 1.5f)).hasMessageContaining("decay (lambda)");
    }
}
