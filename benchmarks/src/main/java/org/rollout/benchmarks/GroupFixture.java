package org.rollout.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.rollout.api.EpisodeResult;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.TensorDict;
import org.rollout.core.TensorDicts;
import org.rollout.core.TrajectoryRows;

/**
 * The micro-benchmarks' workload: one GRPO group of 16 single-turn rows of up to 8k tokens
 * ("a 16 × 8k-token group"), as the rollout produces it. Row {@code i} has a 512-token prompt and
 * {@code 8192 − 512 − 61·i} output tokens (so the padded width is 8192 and rows differ, as real
 * rows do); output versions are 3 for the first third and 4 after (an interrupted generation),
 * logprobs vary, reward {@code i / 16}. Immutable once built.
 */
final class GroupFixture {
    static final int ROWS = 16;
    static final int WIDTH = 8192;
    static final int PROMPT = 512;

    final List<TensorDict> rows;
    final List<EpisodeResult> slots;
    final TensorDict merged;

    GroupFixture() {
        List<TensorDict> r = new ArrayList<>(ROWS);
        for (int i = 0; i < ROWS; i++) {
            r.add(TrajectoryRows.singleTurn(response(i), i / (double) ROWS));
        }
        rows = List.copyOf(r);
        slots = rows.stream().<EpisodeResult>map(EpisodeResult::trajectory).toList();
        merged = TensorDicts.concatPadded(rows);
    }

    static int outputLength(int row) {
        return WIDTH - PROMPT - 61 * row;
    }

    private static ModelResponse response(int row) {
        int n = outputLength(row);
        int[] prompt = new int[PROMPT];
        for (int k = 0; k < PROMPT; k++) {
            prompt[k] = 'a' + (k * 7 + row) % 26;
        }
        int[] out = new int[n];
        float[] logprobs = new float[n];
        int[] versions = new int[n];
        for (int k = 0; k < n; k++) {
            out[k] = 32 + (k * 13 + row) % 95;
            logprobs[k] = -0.01f * (k % 300);
        }
        Arrays.fill(versions, 0, n / 3, 3);
        Arrays.fill(versions, n / 3, n, 4);
        return ModelResponse.of(prompt, out, logprobs, versions, StopReason.STOP, Duration.ofSeconds(1));
    }
}
