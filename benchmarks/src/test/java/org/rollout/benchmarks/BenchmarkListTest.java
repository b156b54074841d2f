package org.rollout.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.runner.BenchmarkList;
import org.openjdk.jmh.runner.BenchmarkListEntry;

/**
 * Guards the build, not the benchmarks (nothing is measured here): on JDK 23+ an annotation
 * processor found only on the class path silently does not run, and JMH then has no benchmark to
 * run, with no error. The compiler plugin names JMH's processor explicitly; this test
 * fails if its output, {@code META-INF/BenchmarkList}, ever goes missing again.
 */
class BenchmarkListTest {
    @Test
    void theAnnotationProcessorListedEveryBenchmark() throws Exception {
        List<BenchmarkListEntry> entries;
        try (InputStream in = BenchmarkListTest.class
                .getClassLoader()
                .getResourceAsStream(BenchmarkList.BENCHMARK_LIST.substring(1))) {
            assertThat(in)
                    .as(BenchmarkList.BENCHMARK_LIST + " on the class path")
                    .isNotNull();
            entries = BenchmarkList.readBenchmarkList(in);
        }

        assertThat(entries)
                .extracting(BenchmarkListEntry::getUsername)
                .contains(
                        "org.rollout.benchmarks.GenerateLoopBenchmark.engineGenerate",
                        "org.rollout.benchmarks.GenerateLoopBenchmark.rawPost",
                        "org.rollout.benchmarks.GenerateLoopBenchmark.rawPostAsync",
                        "org.rollout.benchmarks.GenerateLoopBenchmark.interleaved",
                        "org.rollout.benchmarks.TensorDictsBenchmark.interleaved",
                        "org.rollout.benchmarks.GroupMergerBenchmark.interleaved",
                        "org.rollout.benchmarks.TrajectoryDumperBenchmark.interleaved",
                        "org.rollout.benchmarks.VersionRleBenchmark.interleaved",
                        "org.rollout.benchmarks.SerializationBenchmark.interleaved");
        // JMH names the class it generates for a benchmark method {package}.jmh_generated.{Class}_{method}_jmhTest.
        assertThat(Class.forName("org.rollout.benchmarks.jmh_generated.GenerateLoopBenchmark_engineGenerate_jmhTest"))
                .isNotNull();
        assertThat(Class.forName("org.rollout.benchmarks.jmh_generated.GenerateLoopBenchmark_rawPost_jmhTest"))
                .isNotNull();
    }
}
