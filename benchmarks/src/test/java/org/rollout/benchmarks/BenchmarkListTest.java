package org.rollout.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Guards the build, not the benchmarks (nothing is measured here): on JDK 23+ an annotation
 * processor found only on the class path silently does not run, and JMH then has no benchmark to
 * run (DEPENDENCIES.md pitfall 11). The compiler plugin names JMH's processor explicitly; this test
 * fails if its output, {@code META-INF/BenchmarkList}, ever goes missing again.
 */
class BenchmarkListTest {
    @Test
    void theAnnotationProcessorListedEveryGenerateLoopBenchmark() throws Exception {
        String list;
        try (InputStream in = BenchmarkListTest.class.getClassLoader().getResourceAsStream("META-INF/BenchmarkList")) {
            assertThat(in).as("META-INF/BenchmarkList on the class path").isNotNull();
            list = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }

        assertThat(list)
                .contains("org.rollout.benchmarks.GenerateLoopBenchmark.engineGenerate")
                .contains("org.rollout.benchmarks.GenerateLoopBenchmark.rawPost");
        assertThat(
                        BenchmarkListTest.class
                                .getClassLoader()
                                .getResource(
                                        "org/rollout/benchmarks/jmh_generated/GenerateLoopBenchmark_engineGenerate_jmhTest.class"))
                .as("the generated benchmark class")
                .isNotNull();
    }
}
