package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.WeightPublishException;

/**
 * A trainer that publishes a truncated and then a corrupted weight file before each good one, in a
 * local run with two real built-in model servers over HTTP: every server refuses the bad file, the
 * trainer gets the error naming each server, the version does not move, and the run carries on
 * to its last step with the good files.
 */
class CorruptWeightsTest {

    /** Before each publish of version v: v's file cut in half, then v's file with a flipped byte. */
    private static final class BadFirst extends ForwardingRolloutClient {
        private final Path scratch;
        final List<String> refusals = new ArrayList<>();
        final List<Integer> versionsAfterRefusal = new ArrayList<>();

        BadFirst(RolloutClient inner, Path scratch) {
            super(inner);
            this.scratch = scratch;
        }

        @Override
        public PublishResult publishWeights(int version, Path weights) throws InterruptedException {
            try {
                byte[] good = Files.readAllBytes(weights);
                byte[] flipped = good.clone();
                flipped[flipped.length / 2] ^= 0x5a;
                Path truncated = Files.write(
                        scratch.resolve("v" + version + "-truncated.rlm"),
                        java.util.Arrays.copyOf(good, good.length / 2));
                Path corrupt = Files.write(scratch.resolve("v" + version + "-corrupt.rlm"), flipped);
                for (Path bad : List.of(truncated, corrupt)) {
                    int before = inner.status().version();
                    assertThatThrownBy(() -> inner.publishWeights(version, bad))
                            .isInstanceOfSatisfying(WeightPublishException.class, e -> {
                                assertThat(e.kind()).isEqualTo(WeightPublishException.Kind.NOT_LOADED);
                                refusals.add(e.getMessage());
                            });
                    int after = inner.status().version();
                    assertThat(after).as("the version after a refused publish").isEqualTo(before);
                    versionsAfterRefusal.add(after);
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return inner.publishWeights(version, weights);
        }
    }

    @Test
    void everyServerRefusesABadWeightFileAndTheVersionStays(@TempDir Path dir) throws Exception {
        RolloutSettings settings = RolloutConfig.load(
                null,
                List.of(
                        "rollout.fileroot=" + dir,
                        "rollout.trial_name=corrupt",
                        "gconfig.n_samples=2",
                        "gconfig.max_new_tokens=8",
                        "rollout.consumer_batch_size=4",
                        "rollout.max_concurrent_rollouts=8"),
                LocalCommand.profile("demo"));
        Path scratch = Files.createDirectories(dir.resolve("scratch"));
        BadFirst[] trainer = new BadFirst[1];
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        boolean finished = new LocalRun(
                        settings, true, false, 3, 2, false, new PrintStream(out, true, StandardCharsets.UTF_8))
                .withClientDecorator(c -> trainer[0] = new BadFirst(c, scratch))
                .execute();

        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(finished).as(text).isTrue();
        assertThat(text).contains("Done in").contains("3 steps, weight version 3");
        assertThat(trainer[0].refusals).hasSize(6);
        assertThat(trainer[0].versionsAfterRefusal).containsExactly(0, 0, 1, 1, 2, 2);
        // Each refusal names both servers, each with its reason.
        assertThat(trainer[0].refusals)
                .allSatisfy(m -> assertThat(m).containsPattern("127\\.0\\.0\\.1:\\d+=.*127\\.0\\.0\\.1:\\d+="));
    }
}
