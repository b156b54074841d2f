package org.rollout.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;
import org.rollout.api.TensorDict;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.core.DumpRecord;
import org.rollout.core.DumpResult;
import org.rollout.core.TrajectoryDumper;

/**
 * {@link TrajectoryDumper#dump} of a merged 16 × 8k group ({@link GroupFixture}) to a file under a
 * temporary directory (one new {@code {task_id}.jsonl} per call: JSON encoding, one append under the
 * path lock and a file lock) against {@link TrajectoryDumper#records}, the same per-row work of semantics §7
 * without encoding or I/O (decoding 16 prompts and completions with the byte-level tokenizer,
 * version runs). The ratio is what encoding and writing add; the files are deleted after every
 * iteration.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class TrajectoryDumperBenchmark {
    private TensorDict merged;
    private Path root;
    private TrajectoryDumper dumper;
    private long taskId;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        merged = new GroupFixture().merged;
        root = Files.createTempDirectory("rollout-dump-bench-");
        dumper = new TrajectoryDumper(root, "bench", "trial", ByteLevelTokenizer.INSTANCE);
        if (!(dumper.dump(-1, false, merged, 4) instanceof DumpResult.Written w) || w.records() != 16) {
            throw new IllegalStateException("the fixture's group was not dumped as 16 records");
        }
    }

    @TearDown(Level.Iteration)
    public void deleteDumps() throws IOException {
        deleteTree(root.resolve("bench"));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        deleteTree(root);
    }

    @Benchmark
    public DumpResult dump() {
        return dumper.dump(taskId++, false, merged, 4);
    }

    @Benchmark
    public List<DumpRecord> records() {
        return TrajectoryDumper.records(taskId, merged, 4, ByteLevelTokenizer.INSTANCE);
    }

    /** Both, back to back in alternating order ({@link PairTimes}: subject = dump, baseline = records). */
    @Benchmark
    public void interleaved(PairTimes times, Blackhole bh) {
        boolean baselineFirst = times.baselineFirstThisRound();
        for (int k = 0; k < 2; k++) {
            boolean baseline = (k == 0) == baselineFirst;
            long t0 = System.nanoTime();
            if (baseline) {
                bh.consume(records());
            } else {
                bh.consume(dump());
            }
            long elapsed = System.nanoTime() - t0;
            if (baseline) {
                times.baselineNanos += elapsed;
            } else {
                times.subjectNanos += elapsed;
            }
        }
        times.rounds++;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
