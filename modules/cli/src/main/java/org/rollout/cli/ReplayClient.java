package org.rollout.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.Tokenizer;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.DumpFormatException;
import org.rollout.core.DumpRecord;
import org.rollout.core.TrajectoryDumpReader;
import org.rollout.core.VersionRle;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;

/**
 * The engine side of {@code rollout replay}: the training dumps of a run ({@code
 * rollout/<version>/<task_id>.jsonl}, docs/dumps.md) handed out again as batches, for debugging a
 * trainer without generating. One task (file) is one group; its rows are rebuilt from each line:
 * {@code input_ids} the tokenizer's encoding of the prompt and completion (of each segment, for
 * multi-turn rows), {@code loss_mask} 1 over generated tokens, {@code versions} the line's {@code
 * version_rle} over them (−1 elsewhere), {@code rewards} the line's reward, {@code logprobs} 0
 * (dumps do not keep them). A line whose text does not encode to its {@code seqlen} tokens, {@code
 * version_rle}'s count generated (another tokenizer than the run's; or token ids that are not
 * valid UTF-8, which the dump's text cannot keep) is refused naming its file and line, unless
 * {@code retokenize}: then the row is the text's encoding, and each generated token takes the
 * version of the run at the same relative position of {@code version_rle} (head and tail kept).
 *
 * <p>Batches go out in version then task order, each once; {@link #acknowledge} retires them, and
 * {@link #awaitAllAcknowledged()} returns once every batch was. Publishing weights is accepted and
 * only moves the version {@link #status()} reports.
 */
final class ReplayClient implements RolloutClient {
    private final Deque<TrainingBatch> pending = new ArrayDeque<>();
    private final Map<Long, TrainingBatch> handedOut = new LinkedHashMap<>();
    private final CountDownLatch allAcknowledged;
    private final int groups;
    private final int batchCount;
    private final long retokenized;
    private int version;
    private long delivered;

    private ReplayClient(List<TrainingBatch> batches, long retokenized) {
        this.retokenized = retokenized;
        pending.addAll(batches);
        groups = batches.stream().mapToInt(TrainingBatch::size).sum();
        batchCount = batches.size();
        allAcknowledged = new CountDownLatch(batches.size());
    }

    /**
     * Reads every training dump under {@code runDir} into batches of {@code batchSize} groups (the
     * last may be smaller).
     *
     * @throws DumpFormatException naming the file, line and field of a bad line
     * @throws IOException when the directory or a file cannot be read
     */
    static ReplayClient load(Path runDir, Tokenizer tokenizer, int batchSize, boolean retokenize) throws IOException {
        if (batchSize < 1) {
            throw new IllegalArgumentException("--batch-size must be >= 1, got " + batchSize);
        }
        Path scope = runDir.resolve("rollout");
        if (!Files.isDirectory(scope)) {
            throw new IOException("no training dumps: " + scope + " is not a directory");
        }
        TreeMap<Integer, Path> versions = new TreeMap<>();
        try (Stream<Path> dirs = Files.list(scope)) {
            for (Path d : dirs.toList()) {
                if (Files.isDirectory(d) && d.getFileName().toString().matches("\\d{1,9}")) {
                    versions.put(Integer.parseInt(d.getFileName().toString()), d);
                }
            }
        }
        List<TrainingGroup> all = new ArrayList<>();
        long[] retokenized = {0};
        for (var v : versions.entrySet()) {
            TreeMap<Long, Path> tasks = new TreeMap<>();
            try (Stream<Path> files = Files.list(v.getValue())) {
                for (Path f : files.toList()) {
                    String name = f.getFileName().toString();
                    if (name.matches("\\d{1,18}\\.jsonl")) {
                        tasks.put(Long.parseLong(name.substring(0, name.length() - ".jsonl".length())), f);
                    }
                }
            }
            for (var t : tasks.entrySet()) {
                List<DumpRecord> records = TrajectoryDumpReader.read(t.getValue());
                if (!records.isEmpty()) {
                    all.add(group(t.getKey(), v.getKey(), records, tokenizer, t.getValue(), retokenize, retokenized));
                }
            }
        }
        List<TrainingBatch> batches = new ArrayList<>();
        for (int i = 0, id = 1; i < all.size(); i += batchSize, id++) {
            List<TrainingGroup> part = all.subList(i, Math.min(all.size(), i + batchSize));
            batches.add(new TrainingBatch(
                    id, List.copyOf(part), part.get(part.size() - 1).completionVersion()));
        }
        return new ReplayClient(batches, retokenized[0]);
    }

    /** The token ids of one row and the positions that were generated. */
    private record Row(int[] ids, boolean[] generated, boolean exact) {}

    private static Row row(DumpRecord r, Tokenizer tokenizer, Path file, int lineNo, boolean retokenize) {
        List<int[]> parts = new ArrayList<>();
        List<Boolean> gen = new ArrayList<>();
        if (r.isMultiTurn()) {
            for (DumpRecord.Segment s : r.segments()) {
                parts.add(tokenizer.encode(s.text()));
                gen.add(s.role() == DumpRecord.Role.GEN);
            }
        } else {
            parts.add(tokenizer.encode(r.prompt()));
            gen.add(false);
            parts.add(tokenizer.encode(r.completion()));
            gen.add(true);
        }
        int n = parts.stream().mapToInt(p -> p.length).sum();
        int[] ids = new int[n];
        boolean[] generated = new boolean[n];
        int at = 0;
        for (int i = 0; i < parts.size(); i++) {
            int[] p = parts.get(i);
            System.arraycopy(p, 0, ids, at, p.length);
            for (int j = 0; j < p.length; j++) {
                generated[at + j] = gen.get(i);
            }
            at += p.length;
        }
        long generatedCount = 0;
        for (boolean g : generated) {
            generatedCount += g ? 1 : 0;
        }
        long rle = r.versionRle().stream().mapToLong(VersionRle.Run::count).sum();
        boolean exact = generatedCount == rle && n == r.seqlen();
        if (!exact && !retokenize) {
            throw new DumpFormatException(
                    file.toString(),
                    lineNo,
                    "version_rle",
                    "the text encodes to " + n + " tokens, " + generatedCount + " generated, but the line has seqlen "
                            + r.seqlen()
                            + " and version_rle counts " + rle
                            + " generated tokens (is --tokenizer the run's rollout.tokenizer_path? token ids that are not"
                            + " valid UTF-8 do not survive the dump's text: --retokenize replays the text's encoding)");
        }
        return new Row(ids, generated, exact);
    }

    private static TrainingGroup group(
            long taskId,
            int dirVersion,
            List<DumpRecord> records,
            Tokenizer tokenizer,
            Path file,
            boolean retokenize,
            long[] retokenized) {
        List<Row> rows = new ArrayList<>();
        int width = 0;
        for (int i = 0; i < records.size(); i++) {
            Row row = row(records.get(i), tokenizer, file, i + 1, retokenize);
            retokenized[0] += row.exact() ? 0 : 1;
            rows.add(row);
            width = Math.max(width, row.ids().length);
        }
        int b = rows.size();
        Int32Tensor.Builder ids = Int32Tensor.builder(b, width);
        Int32Tensor.Builder attention = Int32Tensor.builder(b, width);
        Int32Tensor.Builder loss = Int32Tensor.builder(b, width);
        Int32Tensor.Builder versions = Int32Tensor.builder(b, width);
        float[] rewards = new float[b];
        int head = Integer.MAX_VALUE;
        int tail = Integer.MIN_VALUE;
        for (int i = 0; i < b; i++) {
            Row row = rows.get(i);
            DumpRecord r = records.get(i);
            int base = i * width;
            ids.copyFrom(base, row.ids(), 0, row.ids().length);
            attention.fill(base, base + row.ids().length, 1);
            versions.fill(base, base + width, -1);
            int g = 0;
            int[] expanded = new int
                    [(int) r.versionRle().stream()
                            .mapToLong(VersionRle.Run::count)
                            .sum()];
            for (VersionRle.Run run : r.versionRle()) {
                for (int k = 0; k < run.count(); k++) {
                    expanded[g++] = run.version();
                }
            }
            int generatedHere = 0;
            for (boolean gen : row.generated()) {
                generatedHere += gen ? 1 : 0;
            }
            g = 0;
            for (int j = 0; j < row.ids().length; j++) {
                if (row.generated()[j]) {
                    // Exact rows: one version per token. Re-tokenized rows: the run at the same relative position.
                    int at = generatedHere == expanded.length
                            ? g
                            : (int) Math.min(expanded.length - 1, (long) g * expanded.length / generatedHere);
                    loss.fill(base + j, base + j + 1, 1);
                    versions.fill(base + j, base + j + 1, expanded[at]);
                    g++;
                }
            }
            rewards[i] = (float) r.reward();
            head = Math.min(head, r.headVersion());
            tail = Math.max(tail, r.tailVersion());
        }
        TensorDict dict = TensorDict.builder()
                .put(TensorDict.INPUT_IDS, ids.build())
                .put(TensorDict.ATTENTION_MASK, attention.build())
                .put(TensorDict.LOSS_MASK, loss.build())
                .put(TensorDict.LOGPROBS, Float32Tensor.of(new float[b * width], b, width))
                .put(TensorDict.VERSIONS, versions.build())
                .put(TensorDict.REWARDS, Float32Tensor.of(rewards, b))
                .build();
        int[] slots = new int[b];
        int[] counts = new int[b];
        for (int i = 0; i < b; i++) {
            slots[i] = records.get(i).sampleIdx();
            counts[i] = 1;
        }
        return new TrainingGroup(taskId, 0, dict, slots, counts, head, head, tail, dirVersion);
    }

    /** Groups to replay in all. */
    int groups() {
        return groups;
    }

    /** Rows rebuilt from re-tokenized text (lengths differ from the dump's). */
    long retokenized() {
        return retokenized;
    }

    /** Batches to replay in all. */
    int batches() {
        return batchCount;
    }

    /** Waits until every batch has been acknowledged. */
    void awaitAllAcknowledged() throws InterruptedException {
        allAcknowledged.await();
    }

    /** True once every batch has been acknowledged. */
    boolean done() {
        return allAcknowledged.getCount() == 0;
    }

    @Override
    public TrainingBatch nextBatch() throws InterruptedException {
        return nextBatch(Duration.ofDays(365)).orElseThrow();
    }

    @Override
    public synchronized Optional<TrainingBatch> nextBatch(Duration timeout) {
        TrainingBatch b = pending.pollFirst();
        if (b == null) {
            return Optional.empty();
        }
        handedOut.put(b.batchId(), b);
        delivered += b.size();
        return Optional.of(b);
    }

    @Override
    public synchronized void acknowledge(TrainingBatch batch) {
        acknowledge(batch.batchId());
    }

    @Override
    public synchronized void acknowledge(long batchId) {
        if (handedOut.remove(batchId) != null) {
            allAcknowledged.countDown();
        }
    }

    @Override
    public void acknowledge(long batchId, List<Long> taskIds) {
        acknowledge(batchId);
    }

    @Override
    public synchronized PublishResult publishWeights(int newVersion, Path weights) {
        version = Math.max(version, newVersion);
        return new PublishResult(newVersion, Duration.ZERO, 0, Map.of());
    }

    @Override
    public synchronized RolloutStatus status() {
        return new RolloutStatus(
                version,
                0,
                delivered,
                0,
                0,
                pending.stream().mapToInt(TrainingBatch::size).sum(),
                handedOut.size(),
                0,
                0,
                Map.of(),
                Map.of());
    }

    @Override
    public void close() {}
}
