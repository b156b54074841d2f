package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The dump directory on a 64 KiB {@code tmpfs} that fills during a {@code rollout local} run: the
 * failed writes are counted and named in the summary, training goes on to the last step, and what
 * was written stays readable (no partial line, no empty file). Needs root to mount; skipped
 * otherwise, saying so.
 */
@Timeout(240)
class DiskFullTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    @Test
    void aFullDumpDiskIsCountedAndTrainingGoesOn() throws Exception {
        Path fileroot = run.dir().resolve("runs");
        Path dumps = fileroot.resolve("demo/full/rollout");
        Files.createDirectories(dumps);
        String mounted = ManagedProcess.run(
                List.of("/bin/sh", "-c", "mount -t tmpfs -o size=64k tmpfs '" + dumps + "' 2>&1 && echo mounted; true"),
                java.util.Map.of(),
                run.dir(),
                Duration.ofSeconds(20));
        assumeTrue(mounted.contains("mounted"), "cannot mount a tmpfs here (needs root): " + mounted);
        try {
            ManagedProcess local = CliProcess.start(
                    run,
                    "local-disk-full",
                    "local",
                    "--demo",
                    "--steps",
                    "4",
                    "--no-status",
                    // The run directory exists: the tmpfs is mounted in it before the run.
                    "--reuse-run-dir",
                    "rollout.trial_name=full",
                    "rollout.fileroot=" + fileroot);
            int status = local.awaitExit(Duration.ofSeconds(180));
            String out = String.join("\n", local.lines());
            assertThat(status).as("exit status; output:\n" + out).isZero();
            assertThat(out)
                    .contains("Done in")
                    .containsPattern("4 steps, weight version 4")
                    .containsPattern("DUMPS FAILED: [1-9]\\d* write\\(s\\) failed, \\d+ succeeded; the groups were"
                            + " trained on all the same \\(last: .*No space left on device\\)");
            try (Stream<Path> files = Files.walk(dumps)) {
                for (Path f : files.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                    assertThat(Files.size(f)).as("size of " + f).isPositive();
                    List<String> lines = Files.readAllLines(f);
                    for (String line : lines) {
                        assertThat(JSON.readTree(line).has("task_id"))
                                .as("a whole record in " + f)
                                .isTrue();
                    }
                    assertThat(Files.readString(f))
                            .as(f + " ends with a whole line")
                            .endsWith("\n");
                }
            }
        } finally {
            ManagedProcess.run(
                    List.of("umount", dumps.toString()), java.util.Map.of(), run.dir(), Duration.ofSeconds(20));
        }
    }
}
