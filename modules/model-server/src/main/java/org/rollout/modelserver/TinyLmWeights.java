package org.rollout.modelserver;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.zip.CRC32;
import org.rollout.core.ByteLevelTokenizer;

/**
 * One immutable snapshot of the tiny language model's parameters: a bias {@code b ∈ R^V}, a bigram
 * table {@code P ∈ R^{V×V}} indexed {@code [previous token][next token]}, a context table {@code C ∈
 * R^{V×V}} indexed {@code [context token][next token]}, the context decay {@code λ}, and the RL
 * weight version these parameters belong to. {@code V} is always the byte-level vocabulary, 263
 * ({@link ByteLevelTokenizer#VOCAB_SIZE}). {@link TinyLm} holds the math that uses them.
 *
 * <p>Where weights come from: {@link #seeded(long)} (small random normal values, the same for the
 * same seed on every JVM), {@link #read(Path)} (the binary weight file described in {@code
 * docs/model-server.md}), {@link #of} (explicit arrays, copied), or an optimizer step ({@link
 * TinyLmOptimizer}).
 *
 * <p>Weight file, version 1, little-endian:
 *
 * <pre>
 *   offset            size    field
 *   0                 8       magic, ASCII "RLTINYLM"
 *   8                 4       format version (int32) = 1
 *   12                4       V (int32) = 263
 *   16                4       λ, the context decay (float32), in [0, 1]
 *   20                4       weight version (int32), ≥ 0
 *   24                4V      b (float32)
 *   24+4V             4V²     P (float32, row-major, row = previous token)
 *   24+4V+4V²         4V²     C (float32, row-major, row = context token)
 *   24+4V+8V²         4       CRC32 of every byte before it (uint32)
 * </pre>
 *
 * <p>{@link #write(Path)} is atomic: it writes a temporary file in the same directory, forces it to
 * disk and renames it over the target, so a reader sees the old file or the new one, never half of
 * one. {@link #read(Path)} rejects a bad file with a {@link WeightFileException} naming the path and
 * the defect.
 *
 * <p>Immutable and thread-safe. {@link #withVersion(int)} shares the (never mutated) arrays.
 */
public final class TinyLmWeights {
    /** V: the byte-level tokenizer's vocabulary size, 263. */
    public static final int VOCAB_SIZE = ByteLevelTokenizer.VOCAB_SIZE;
    /** The default context decay λ. */
    public static final float DEFAULT_DECAY = 0.85f;
    /** The default standard deviation of seeded weights. */
    public static final double DEFAULT_INIT_STD = 0.02;
    /** The weight file format version this class reads and writes. */
    public static final int FORMAT_VERSION = 1;

    static final byte[] MAGIC = "RLTINYLM".getBytes(StandardCharsets.US_ASCII);
    static final int HEADER_BYTES = 24;

    private final int version;
    private final float decay;
    // Package-private for the model's inner loops; never mutated after construction.
    final float[] bias;
    final float[] bigram;
    final float[] context;
    // parameterDigest(), computed once on first use (a benign race: every thread computes the same).
    private volatile String digest;

    private TinyLmWeights(int version, float decay, float[] bias, float[] bigram, float[] context) {
        this.version = version;
        this.decay = decay;
        this.bias = bias;
        this.bigram = bigram;
        this.context = context;
    }

    /** Seeded weights with std {@value #DEFAULT_INIT_STD}, decay {@value #DEFAULT_DECAY}, version 0. */
    public static TinyLmWeights seeded(long seed) {
        return seeded(seed, DEFAULT_INIT_STD, DEFAULT_DECAY);
    }

    /**
     * Weights drawn from N(0, std²) by a {@link SplittableRandom} seeded with {@code seed}, in the order
     * b, P, C (row-major); version 0. The normal draws use Box–Muller on {@code nextDouble()}, so the
     * result does not depend on the JDK's Gaussian algorithm.
     */
    public static TinyLmWeights seeded(long seed, double std, float decay) {
        if (!(std >= 0) || Double.isInfinite(std)) {
            throw new IllegalArgumentException("init std must be finite and >= 0, got " + std);
        }
        checkDecay(decay);
        SplittableRandom random = new SplittableRandom(seed);
        float[] b = normal(random, VOCAB_SIZE, std);
        float[] p = normal(random, VOCAB_SIZE * VOCAB_SIZE, std);
        float[] c = normal(random, VOCAB_SIZE * VOCAB_SIZE, std);
        return new TinyLmWeights(0, decay, b, p, c);
    }

    private static float[] normal(SplittableRandom random, int n, double std) {
        float[] out = new float[n];
        for (int i = 0; i < n; i += 2) {
            double u1 = 1.0 - random.nextDouble(); // (0, 1]: log is finite
            double u2 = random.nextDouble();
            double r = Math.sqrt(-2.0 * Math.log(u1));
            out[i] = (float) (std * r * Math.cos(2 * Math.PI * u2));
            if (i + 1 < n) {
                out[i + 1] = (float) (std * r * Math.sin(2 * Math.PI * u2));
            }
        }
        return out;
    }

    /**
     * Weights from explicit arrays, which are copied: {@code bias} of length V, {@code bigram} and
     * {@code context} of length V² (row-major). Every value must be finite.
     *
     * @throws IllegalArgumentException naming the array and index of a bad value, or a bad length
     */
    public static TinyLmWeights of(int version, float decay, float[] bias, float[] bigram, float[] context) {
        checkVersion(version);
        checkDecay(decay);
        checkArray("bias", bias, VOCAB_SIZE);
        checkArray("bigram", bigram, VOCAB_SIZE * VOCAB_SIZE);
        checkArray("context", context, VOCAB_SIZE * VOCAB_SIZE);
        return new TinyLmWeights(version, decay, bias.clone(), bigram.clone(), context.clone());
    }

    /** Wraps arrays the caller hands over and never touches again (optimizer results). */
    static TinyLmWeights adopt(int version, float decay, float[] bias, float[] bigram, float[] context) {
        checkArray("bias", bias, VOCAB_SIZE);
        checkArray("bigram", bigram, VOCAB_SIZE * VOCAB_SIZE);
        checkArray("context", context, VOCAB_SIZE * VOCAB_SIZE);
        return new TinyLmWeights(version, decay, bias, bigram, context);
    }

    private static void checkVersion(int version) {
        if (version < 0) {
            throw new IllegalArgumentException("weight version must be >= 0, got " + version);
        }
    }

    private static void checkDecay(float decay) {
        if (!(decay >= 0f && decay <= 1f)) {
            throw new IllegalArgumentException("decay (lambda) must be in [0, 1], got " + decay);
        }
    }

    private static void checkArray(String name, float[] values, int length) {
        if (values.length != length) {
            throw new IllegalArgumentException(name + " must have length " + length + ", got " + values.length);
        }
        for (int i = 0; i < values.length; i++) {
            if (!Float.isFinite(values[i])) {
                throw new IllegalArgumentException(name + "[" + i + "] is not finite: " + values[i]);
            }
        }
    }

    /** The same parameters labelled with another RL weight version. */
    public TinyLmWeights withVersion(int newVersion) {
        checkVersion(newVersion);
        return newVersion == version ? this : new TinyLmWeights(newVersion, decay, bias, bigram, context);
    }

    /** The RL weight version these parameters belong to. */
    public int version() {
        return version;
    }

    /** λ, the per-token decay of the context bag. */
    public float decay() {
        return decay;
    }

    /** V, always {@value #VOCAB_SIZE}. */
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    /** {@code b[next]}. */
    public float bias(int next) {
        return bias[next];
    }

    /** {@code P[prev][next]}. */
    public float bigram(int prev, int next) {
        return bigram[prev * VOCAB_SIZE + next];
    }

    /** {@code C[contextToken][next]}. */
    public float context(int contextToken, int next) {
        return context[contextToken * VOCAB_SIZE + next];
    }

    /** A copy of b. */
    public float[] biasArray() {
        return bias.clone();
    }

    /** A copy of P, row-major. */
    public float[] bigramArray() {
        return bigram.clone();
    }

    /** A copy of C, row-major. */
    public float[] contextArray() {
        return context.clone();
    }

    /**
     * A SHA-256 digest (hex, 16 bytes) of the parameters and λ, without the version: two weight
     * sets with the same digest generate alike. {@code /get_model_info} reports it as {@code
     * weights_digest}, so that a trainer can check that a server serves the weights it starts from.
     */
    public String parameterDigest() {
        String d = digest;
        if (d == null) {
            MessageDigest sha;
            try {
                sha = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("the JDK has no SHA-256", e);
            }
            ByteBuffer buf = ByteBuffer.allocate(4 + 4 * (bias.length + bigram.length + context.length))
                    .order(ByteOrder.LITTLE_ENDIAN);
            buf.putFloat(decay);
            for (float[] part : new float[][] {bias, bigram, context}) {
                for (float v : part) {
                    buf.putFloat(v);
                }
            }
            d = HexFormat.of().formatHex(sha.digest(buf.array()), 0, 16);
            digest = d;
        }
        return d;
    }

    /** The size of a weight file in bytes: 28 + 4V + 8V². */
    public static long fileSize() {
        return HEADER_BYTES + 4L * VOCAB_SIZE + 8L * VOCAB_SIZE * VOCAB_SIZE + 4;
    }

    /**
     * Writes these weights to {@code path} atomically (temporary file in the same directory, fsync,
     * rename). Creates missing parent directories.
     *
     * @throws WeightFileException naming the path when writing or renaming fails
     */
    public void write(Path path) throws WeightFileException {
        Path absolute = path.toAbsolutePath();
        ByteBuffer buf = ByteBuffer.allocate((int) fileSize()).order(ByteOrder.LITTLE_ENDIAN);
        buf.put(MAGIC).putInt(FORMAT_VERSION).putInt(VOCAB_SIZE).putFloat(decay).putInt(version);
        for (float v : bias) {
            buf.putFloat(v);
        }
        for (float v : bigram) {
            buf.putFloat(v);
        }
        for (float v : context) {
            buf.putFloat(v);
        }
        CRC32 crc = new CRC32();
        crc.update(buf.array(), 0, buf.position());
        buf.putInt((int) crc.getValue());
        buf.flip();

        Path dir = absolute.getParent();
        Path tmp = null;
        try {
            Files.createDirectories(dir);
            tmp = Files.createTempFile(dir, "." + absolute.getFileName() + ".", ".tmp");
            try (FileChannel ch =
                    FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            try {
                Files.move(tmp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new WeightFileException(absolute, "the file system cannot rename atomically in " + dir, e);
            }
            tmp = null;
        } catch (WeightFileException e) {
            throw e;
        } catch (IOException e) {
            throw new WeightFileException(absolute, "cannot write: " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException cleanup) {
                    // The write already failed; report that failure, noting the leftover.
                    System.getLogger(TinyLmWeights.class.getName())
                            .log(System.Logger.Level.WARNING, "could not delete temporary weight file " + tmp, cleanup);
                }
            }
        }
    }

    /**
     * Reads a weight file.
     *
     * @throws WeightFileException naming the path and the defect: cannot read, wrong magic,
     *     unsupported format version, wrong V, truncated, trailing bytes, CRC mismatch, decay out of
     *     range, negative version, or a non-finite weight
     */
    public static TinyLmWeights read(Path path) throws WeightFileException {
        Path absolute = path.toAbsolutePath();
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(absolute);
        } catch (IOException e) {
            throw new WeightFileException(absolute, "cannot read: " + e, e);
        }
        // The magic first: a file of the wrong kind should say so, whatever its length.
        if (bytes.length >= MAGIC.length && !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new WeightFileException(
                    absolute,
                    "wrong magic " + printable(bytes, MAGIC.length)
                            + ", expected \"RLTINYLM\" (not a tiny-LM weight file)");
        }
        if (bytes.length < HEADER_BYTES) {
            throw new WeightFileException(
                    absolute,
                    "truncated: " + bytes.length + " bytes, shorter than the " + HEADER_BYTES + "-byte header");
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        buf.position(MAGIC.length);
        int format = buf.getInt();
        if (format != FORMAT_VERSION) {
            throw new WeightFileException(
                    absolute, "unsupported format version " + format + ", this reader knows " + FORMAT_VERSION);
        }
        int vocab = buf.getInt();
        if (vocab != VOCAB_SIZE) {
            throw new WeightFileException(
                    absolute,
                    "vocabulary size V=" + vocab + ", expected " + VOCAB_SIZE + " (the byte-level tokenizer)");
        }
        float decay = buf.getFloat();
        int version = buf.getInt();
        long expected = fileSize();
        if (bytes.length < expected) {
            throw new WeightFileException(
                    absolute, "truncated: " + bytes.length + " bytes, expected " + expected + " for V=" + VOCAB_SIZE);
        }
        if (bytes.length > expected) {
            throw new WeightFileException(
                    absolute,
                    "trailing bytes: " + bytes.length + " bytes, expected " + expected + " for V=" + VOCAB_SIZE);
        }
        int crcAt = (int) expected - 4;
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, crcAt);
        int stored =
                ByteBuffer.wrap(bytes, crcAt, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (stored != (int) crc.getValue()) {
            throw new WeightFileException(
                    absolute,
                    String.format(
                            "CRC32 mismatch (stored 0x%08x, computed 0x%08x): the file is corrupt",
                            stored, (int) crc.getValue()));
        }
        if (!(decay >= 0f && decay <= 1f)) {
            throw new WeightFileException(absolute, "decay (lambda) " + decay + " is outside [0, 1]");
        }
        if (version < 0) {
            throw new WeightFileException(absolute, "weight version " + version + " is negative");
        }
        float[] b = readFloats(buf, VOCAB_SIZE, absolute, "b");
        float[] p = readFloats(buf, VOCAB_SIZE * VOCAB_SIZE, absolute, "P");
        float[] c = readFloats(buf, VOCAB_SIZE * VOCAB_SIZE, absolute, "C");
        return new TinyLmWeights(version, decay, b, p, c);
    }

    private static float[] readFloats(ByteBuffer buf, int n, Path path, String name) throws WeightFileException {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            float v = buf.getFloat();
            if (!Float.isFinite(v)) {
                throw new WeightFileException(path, name + "[" + i + "] is not finite: " + v);
            }
            out[i] = v;
        }
        return out;
    }

    private static String printable(byte[] bytes, int n) {
        StringBuilder sb = new StringBuilder("0x");
        for (int i = 0; i < n; i++) {
            sb.append(String.format("%02x", bytes[i]));
        }
        return sb.toString();
    }

    /** Equal when version, decay and every parameter are bit-for-bit equal. */
    @Override
    public boolean equals(Object o) {
        return o instanceof TinyLmWeights w
                && w.version == version
                && Float.floatToIntBits(w.decay) == Float.floatToIntBits(decay)
                && Arrays.equals(w.bias, bias)
                && Arrays.equals(w.bigram, bigram)
                && Arrays.equals(w.context, context);
    }

    @Override
    public int hashCode() {
        int h = 31 * version + Float.floatToIntBits(decay);
        h = 31 * h + Arrays.hashCode(bias);
        h = 31 * h + Arrays.hashCode(bigram);
        return 31 * h + Arrays.hashCode(context);
    }

    @Override
    public String toString() {
        return "TinyLmWeights{V=" + VOCAB_SIZE + ", decay=" + decay + ", version=" + version + "}";
    }
}
