package org.rollout.core;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.rollout.api.DType;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.Tokenizer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends one task's trajectory to a JSON-lines file for inspection (semantics §7, {@code docs/dumps.md}),
 * accepted or rejected alike.
 *
 * <pre>
 *   {fileroot}/{experiment_name}/{trial_name}/{rollout|eval-rollout}/{version}/{task_id}.jsonl
 *
 *   trajectory ──► one {@link DumpRecord} per row that has a generated last token
 *              ──► all lines encoded first ──► one append write, under a lock
 * </pre>
 *
 * <p><b>Path.</b> Without AReaL's {@code .../logs/{user}/...} part:
 * deliberate (docs/architecture.md lists it). {@code eval-rollout} for evaluation tasks. {@code version} is the
 * <em>maximum version over generated tokens</em> (loss mask 1 within each row's valid length) of
 * all rows — AReaL takes the maximum over the whole padded tensor, so its prompt (−1) and padding
 * (0) positions take part; ours never do. Without a {@code versions} key, or without any generated
 * token, it is {@code defaultVersion} (the engine's current version), and a missing
 * {@code versions} key is logged as a warning. One file per task; a re-dispatched task appends to
 * the same file.
 *
 * <p><b>Rows</b> follow semantics §7 step by step: the valid length is the attention mask's row sum (right
 * padding assumed, not checked); rows of length 0 and rows whose last valid token is not generated
 * are skipped; text is decoded with special tokens kept. Masks and versions may be int32, int64 or
 * bool tensors, read through {@link Tensor#getLong}; only the value 1 counts as generated.
 * Rewards are {@code [B]} or {@code [B, 1]}; a float32 reward is written as its shortest decimal
 * ({@code 0.1}, not {@code 0.10000000149011612}).
 *
 * <p><b>Errors.</b> {@link #dump} never throws for bad data or a failed write: it returns
 * {@link DumpResult.Skipped} with a reason, and the caller logs it with the task id. Reasons:
 * {@code "trajectory is null"}, {@code "dump dir is empty"}, {@code "tokenizer not configured"},
 * {@code "missing key 'rewards'"} (or {@code "missing keys 'input_ids', 'rewards'"}),
 * {@code "no row to dump: ..."} (every row empty or ending on a non-generated token; AReaL
 * creates an empty file instead), and {@code "dump failed: ..."} for anything else (tensor shapes,
 * token ids the tokenizer rejects, I/O).
 *
 * <p><b>A full or failing disk.</b> A write that fails (no space left, an I/O error) is logged as
 * an error, counted ({@link #writeFailures()}), and cut back to the file's previous length (a
 * file it had created is removed), so a dump file never ends in a partial line; the group itself is unaffected (semantics §6.4 step 6).
 *
 * <p><b>Threading.</b> Thread-safe (the tokenizer must be, as {@link Tokenizer} requires); its
 * only state is the counts of writes. Many groups dump at once and a re-dispatched task may append to a file another
 * attempt is writing, so all lines of one call are encoded first and written with a single
 * append under a JVM-wide lock for that path (striped, shared by every dumper in the JVM) and a
 * {@link FileChannel#lock() file lock} against other processes; lines of two calls never
 * interleave. The JVM-wide lock is required, not only polite: file locks belong to the whole JVM,
 * so a second thread asking for one would get {@code OverlappingFileLockException}, not a wait.
 */
public final class TrajectoryDumper {
    private static final Logger LOG = LoggerFactory.getLogger(TrajectoryDumper.class);

    /** The keys a dump needs, in the order their absence is reported. */
    static final List<String> REQUIRED_KEYS =
            List.of(TensorDict.INPUT_IDS, TensorDict.REWARDS, TensorDict.LOSS_MASK, TensorDict.ATTENTION_MASK);

    private static final int LOCK_STRIPES = 64;
    private static final ReentrantLock[] PATH_LOCKS = new ReentrantLock[LOCK_STRIPES];

    static {
        for (int k = 0; k < LOCK_STRIPES; k++) {
            PATH_LOCKS[k] = new ReentrantLock();
        }
    }

    private final Path fileroot;
    private final String experimentName;
    private final String trialName;
    private final Tokenizer tokenizer;
    private final AtomicLong filesWritten = new AtomicLong();
    private final AtomicLong writeFailures = new AtomicLong();
    private volatile String lastWriteFailure;

    /**
     * A dumper writing under {@code fileroot}. Unset (null or blank) values are allowed: every
     * dump is then skipped with {@code "dump dir is empty"} or {@code "tokenizer not configured"},
     * as in AReaL.
     *
     * @param tokenizer decodes the text of records; null when {@code tokenizer_path} is unset
     * @throws InvalidConfigException when {@code experiment_name} or {@code trial_name} is not a
     *     single directory name (contains {@code /} or {@code \}, or is {@code .} or {@code ..})
     */
    public TrajectoryDumper(Path fileroot, String experimentName, String trialName, Tokenizer tokenizer) {
        this.fileroot = fileroot;
        this.experimentName = requireSingleName("experiment_name", experimentName);
        this.trialName = requireSingleName("trial_name", trialName);
        this.tokenizer = tokenizer;
    }

    private static String requireSingleName(String key, String value) {
        if (value != null
                && !value.isBlank()
                && (value.contains("/") || value.contains("\\") || value.equals(".") || value.equals(".."))) {
            throw new InvalidConfigException(key, value, "a single directory name (no '/', '\\', '.' or '..')");
        }
        return value;
    }

    /**
     * {@code {fileroot}/{experiment_name}/{trial_name}/{rollout|eval-rollout}}, or empty when any
     * of the three is unset or blank.
     */
    public Optional<Path> dumpDir(boolean isEval) {
        if (fileroot == null
                || fileroot.toString().isBlank()
                || experimentName == null
                || experimentName.isBlank()
                || trialName == null
                || trialName.isBlank()) {
            return Optional.empty();
        }
        return Optional.of(
                fileroot.resolve(experimentName).resolve(trialName).resolve(isEval ? "eval-rollout" : "rollout"));
    }

    /**
     * Appends the records of {@code trajectory} to
     * {@code {dumpDir}/{directoryVersion}/{taskId}.jsonl}.
     *
     * @param taskId the task (prompt group) the trajectory belongs to
     * @param isEval whether it is an evaluation task ({@code eval-rollout})
     * @param trajectory the task's merged rows
     * @param defaultVersion the engine's current weight version, used where versions are unknown
     * @return what was written, or why nothing was; never throws for bad data or I/O
     */
    public DumpResult dump(long taskId, boolean isEval, TensorDict trajectory, int defaultVersion) {
        if (trajectory == null) {
            return new DumpResult.Skipped("trajectory is null");
        }
        Optional<Path> dir = dumpDir(isEval);
        if (dir.isEmpty()) {
            return new DumpResult.Skipped("dump dir is empty");
        }
        if (tokenizer == null) {
            return new DumpResult.Skipped("tokenizer not configured");
        }
        List<String> missing =
                REQUIRED_KEYS.stream().filter(k -> !trajectory.has(k)).toList();
        if (!missing.isEmpty()) {
            return new DumpResult.Skipped(
                    (missing.size() == 1 ? "missing key '" : "missing keys '") + String.join("', '", missing) + "'");
        }
        try {
            if (!trajectory.has(TensorDict.VERSIONS)) {
                LOG.warn(
                        "task {}: trajectory has no '{}' key; dumping with the engine's current version {}",
                        taskId,
                        TensorDict.VERSIONS,
                        defaultVersion);
            }
            List<DumpRecord> records = records(taskId, trajectory, defaultVersion, tokenizer);
            if (records.isEmpty()) {
                return new DumpResult.Skipped("no row to dump: every row is empty or ends on a non-generated token ("
                        + trajectory.batchSize() + " rows)");
            }
            int version = directoryVersion(trajectory, defaultVersion);
            StringBuilder lines = new StringBuilder();
            for (DumpRecord r : records) {
                lines.append(r.toJson()).append('\n');
            }
            Path file = dir.get().resolve(Integer.toString(version)).resolve(taskId + ".jsonl");
            try {
                append(file, lines.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                long failures = writeFailures.incrementAndGet();
                lastWriteFailure = file + ": " + e;
                LOG.error(
                        "task {}: cannot write its dump {} ({}); {} dump write(s) failed so far; the group is"
                                + " delivered all the same",
                        taskId,
                        file,
                        e.toString(),
                        failures);
                return new DumpResult.Skipped("dump failed: " + e);
            }
            filesWritten.incrementAndGet();
            return new DumpResult.Written(file, records.size());
        } catch (IllegalArgumentException e) {
            // Our own checks of the data (shapes, ids, lengths) and the tokenizer's: the message says it.
            return new DumpResult.Skipped("dump failed: " + (e.getMessage() != null ? e.getMessage() : e.toString()));
        } catch (Exception e) {
            return new DumpResult.Skipped("dump failed: " + e);
        }
    }

    /**
     * The records {@link #dump} would write for {@code trajectory}, in row order, without writing:
     * semantics §7's per-row procedure as a pure function.
     *
     * @throws IllegalArgumentException naming the key (and row) when a required key is missing, a
     *     tensor has the wrong shape, an attention row sums outside {@code [0, L]}, or a token id
     *     or version does not fit an int; and whatever the tokenizer throws for ids it rejects
     */
    public static List<DumpRecord> records(
            long taskId, TensorDict trajectory, int defaultVersion, Tokenizer tokenizer) {
        Objects.requireNonNull(tokenizer, "tokenizer");
        Layout t = Layout.of(trajectory);
        List<DumpRecord> records = new ArrayList<>();
        for (int i = 0; i < t.rows(); i++) {
            int seqlen = t.seqlen(i);
            if (seqlen == 0 || !t.generated(i, seqlen - 1)) {
                continue;
            }
            int[] ids = new int[seqlen];
            int[] mask = new int[seqlen];
            for (int k = 0; k < seqlen; k++) {
                ids[k] = t.intAt(t.inputIds(), TensorDict.INPUT_IDS, i, k);
                mask[k] = t.generated(i, k) ? 1 : 0;
            }
            List<VersionRle.Run> rle;
            GeneratedVersions range;
            if (t.versions() != null) {
                int[] versions = rowVersions(t, i, seqlen);
                rle = VersionRle.encode(versions, mask, seqlen);
                range = GeneratedVersions.of(versions, mask, seqlen).orElseThrow(); // the last position is generated
            } else {
                rle = List.of(
                        new VersionRle.Run(defaultVersion, Arrays.stream(mask).sum()));
                range = new GeneratedVersions(defaultVersion, defaultVersion);
            }
            int head = range.head();
            int tail = range.tail();

            int promptEnd = 0;
            while (mask[promptEnd] != 1) {
                promptEnd++; // terminates: the last position is generated
            }
            String prompt = tokenizer.decode(Arrays.copyOfRange(ids, 0, promptEnd), false);
            String completion = tokenizer.decode(Arrays.copyOfRange(ids, promptEnd, seqlen), false);
            Double originalReward = t.originalRewards() != null ? t.rewardAt(t.originalRewards(), i) : null;
            records.add(new DumpRecord(
                    taskId,
                    i,
                    seqlen,
                    promptEnd,
                    head,
                    tail,
                    rle,
                    t.rewardAt(t.rewards(), i),
                    prompt,
                    completion,
                    segments(ids, mask, tokenizer),
                    originalReward));
        }
        return records;
    }

    /**
     * The dump directory's version for {@code trajectory}: the greatest version over generated
     * positions (loss mask 1 within each row's valid length) of all rows, or
     * {@code defaultVersion} when there is no {@code versions} key or no generated token.
     *
     * @throws IllegalArgumentException as {@link #records} does for a malformed trajectory
     */
    public static int directoryVersion(TensorDict trajectory, int defaultVersion) {
        Layout t = Layout.of(trajectory);
        if (t.versions() == null) {
            return defaultVersion;
        }
        GeneratedVersions all = null;
        for (int i = 0; i < t.rows(); i++) {
            int seqlen = t.seqlen(i);
            int[] mask = new int[seqlen];
            for (int k = 0; k < seqlen; k++) {
                mask[k] = t.generated(i, k) ? 1 : 0;
            }
            GeneratedVersions row = GeneratedVersions.of(rowVersions(t, i, seqlen), mask, seqlen)
                    .orElse(null);
            all = all == null ? row : all.union(row);
        }
        return all == null ? defaultVersion : all.tail();
    }

    /** The versions of row {@code i}'s first {@code seqlen} positions. */
    private static int[] rowVersions(Layout t, int i, int seqlen) {
        int[] versions = new int[seqlen];
        for (int k = 0; k < seqlen; k++) {
            versions[k] = t.intAt(t.versions(), TensorDict.VERSIONS, i, k);
        }
        return versions;
    }

    /**
     * The maximal runs of a row when it has two or more generated runs, else empty: {@code gen}
     * for generated runs, {@code prompt} for the first other run, {@code context} for later ones.
     */
    private static List<DumpRecord.Segment> segments(int[] ids, int[] mask, Tokenizer tokenizer) {
        int genRuns = 0;
        for (int k = 0; k < mask.length; k++) {
            if (mask[k] == 1 && (k == 0 || mask[k - 1] != 1)) {
                genRuns++;
            }
        }
        if (genRuns < 2) {
            return List.of();
        }
        List<DumpRecord.Segment> segments = new ArrayList<>();
        boolean seenPrompt = false;
        int start = 0;
        while (start < mask.length) {
            int end = start + 1;
            while (end < mask.length && mask[end] == mask[start]) {
                end++;
            }
            DumpRecord.Role role;
            if (mask[start] == 1) {
                role = DumpRecord.Role.GEN;
            } else if (!seenPrompt) {
                role = DumpRecord.Role.PROMPT;
                seenPrompt = true;
            } else {
                role = DumpRecord.Role.CONTEXT;
            }
            segments.add(new DumpRecord.Segment(
                    role, end - start, tokenizer.decode(Arrays.copyOfRange(ids, start, end), false)));
            start = end;
        }
        return segments;
    }

    /** One write of {@code bytes} at the end of {@code file}, never interleaved with another. */
    /** Dump writes that succeeded (one per {@link DumpResult.Written}). */
    public long filesWritten() {
        return filesWritten.get();
    }

    /** Dump writes that failed for I/O (a full disk, an unwritable directory). */
    public long writeFailures() {
        return writeFailures.get();
    }

    /** The file and error of the last failed write, if any. */
    public Optional<String> lastWriteFailure() {
        return Optional.ofNullable(lastWriteFailure);
    }

    /**
     * Appends {@code bytes}, or on failure cuts the file back to its length before (no partial
     * line), removing it when it was empty.
     */
    private static void append(Path file, byte[] bytes) throws IOException {
        Files.createDirectories(file.getParent());
        Path key = file.toAbsolutePath().normalize();
        ReentrantLock lock = PATH_LOCKS[Math.floorMod(key.hashCode(), LOCK_STRIPES)];
        lock.lock();
        try (FileChannel channel = FileChannel.open(
                file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            FileLock fileLock = channel.lock();
            long before = channel.size();
            try {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            } catch (IOException e) {
                try {
                    if (before == 0) {
                        Files.deleteIfExists(file); // created by this call: leave no empty file
                    } else {
                        channel.truncate(before);
                    }
                } catch (IOException cut) {
                    e.addSuppressed(cut);
                }
                throw e;
            } finally {
                fileLock.release();
            }
        } finally {
            lock.unlock();
        }
    }

    /** The tensors a dump reads, with their shapes checked against {@code input_ids [B, L]}. */
    private record Layout(
            Tensor inputIds,
            Tensor attentionMask,
            Tensor lossMask,
            Tensor versions,
            Tensor rewards,
            Tensor originalRewards,
            int rows,
            int width) {

        static Layout of(TensorDict d) {
            for (String key : REQUIRED_KEYS) {
                if (!d.has(key)) {
                    throw new IllegalArgumentException("missing key '" + key + "'");
                }
            }
            Tensor ids = d.get(TensorDict.INPUT_IDS);
            if (ids.rank() != 2) {
                throw new IllegalArgumentException("tensor 'input_ids' must be [B, L], got " + ids.describe());
            }
            int rows = ids.dim(0);
            int width = ids.dim(1);
            Tensor attention = sameShape(d, TensorDict.ATTENTION_MASK, ids);
            Tensor loss = sameShape(d, TensorDict.LOSS_MASK, ids);
            Tensor versions = d.has(TensorDict.VERSIONS) ? sameShape(d, TensorDict.VERSIONS, ids) : null;
            Tensor rewards = perRow(d, TensorDict.REWARDS, rows);
            Tensor original = d.has(TensorDict.ORIGINAL_REWARDS) ? perRow(d, TensorDict.ORIGINAL_REWARDS, rows) : null;
            return new Layout(ids, attention, loss, versions, rewards, original, rows, width);
        }

        private static Tensor sameShape(TensorDict d, String key, Tensor ids) {
            Tensor t = d.get(key);
            if (!Arrays.equals(t.shape(), ids.shape())) {
                throw new IllegalArgumentException("tensor '" + key + "' is " + t.describe() + ", but input_ids is "
                        + ids.describe() + "; they must have the same shape");
            }
            return t;
        }

        private static Tensor perRow(TensorDict d, String key, int rows) {
            Tensor t = d.get(key);
            boolean ok = (t.rank() == 1 && t.dim(0) == rows) || (t.rank() == 2 && t.dim(0) == rows && t.dim(1) == 1);
            if (!ok) {
                throw new IllegalArgumentException("tensor '" + key + "' is " + t.describe() + ", expected [" + rows
                        + "] or [" + rows + ", 1] for " + rows + " rows");
            }
            return t;
        }

        /** The valid length of row {@code i}: the sum of its attention mask. */
        int seqlen(int i) {
            long sum = 0;
            int base = i * width;
            for (int k = 0; k < width; k++) {
                sum += attentionMask.getLong(base + k);
            }
            if (sum < 0 || sum > width) {
                throw new IllegalArgumentException("attention_mask row " + i + " sums to " + sum + ", outside [0, "
                        + width + "]; it must hold 0s and 1s");
            }
            return (int) sum;
        }

        boolean generated(int i, int k) {
            return lossMask.getLong(i * width + k) == 1;
        }

        int intAt(Tensor t, String key, int i, int k) {
            long v = t.getLong(i * width + k);
            if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(key + "[" + i + ", " + k + "] = " + v + " does not fit an int");
            }
            return (int) v;
        }

        /** A float32 reward as its shortest decimal; other dtypes as their value. */
        double rewardAt(Tensor t, int i) {
            return t.dtype() == DType.FLOAT32 ? PythonJson.float32AsDecimal((float) t.getDouble(i)) : t.getDouble(i);
        }
    }
}
