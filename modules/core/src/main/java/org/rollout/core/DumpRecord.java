package org.rollout.core;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One line of a trajectory dump: one row of one task's trajectory (semantics §7). Written by
 * {@link TrajectoryDumper}, read and checked by {@link TrajectoryDumpReader}; {@code docs/dumps.md}
 * describes the format.
 *
 * <pre>
 *   {"task_id": 7, "sample_idx": 0, "seqlen": 8, "prompt_len": 2, "head_version": 5,
 *    "tail_version": 6, "version_rle": [[5, 3], [6, 1]], "reward": 1.0, "prompt": "..",
 *    "completion": "....", "segments": [...], "original_reward": 0.5}
 * </pre>
 *
 * <p>{@link #toJson()} writes the keys in exactly that order; {@code segments} only for a
 * multi-turn row (two or more generated runs), {@code original_reward} only when the trajectory
 * had {@code original_rewards}.
 *
 * <p>The record itself only checks that nothing is null; whether its fields agree with each
 * other (version runs against generated tokens, segment lengths against {@code seqlen}) is what
 * {@link TrajectoryDumpReader} checks. Immutable.
 *
 * @param taskId the task (prompt group) id; also the file name
 * @param sampleIdx the row index inside the task's trajectory
 * @param seqlen the row's valid length (attention mask sum)
 * @param promptLen the index of the first generated token ({@code prompt_end})
 * @param headVersion the lowest version among generated tokens
 * @param tailVersion the highest version among generated tokens
 * @param versionRle the versions of the generated tokens, run-length encoded
 * @param reward the row's reward
 * @param prompt the decoded tokens before {@code promptLen}, special tokens kept
 * @param completion the decoded tokens from {@code promptLen} on, later context turns included
 * @param segments the row cut into maximal prompt/gen/context runs; empty unless multi-turn
 * @param originalReward the reward before rollout-time normalisation, or null when not recorded
 */
public record DumpRecord(
        long taskId,
        int sampleIdx,
        int seqlen,
        int promptLen,
        int headVersion,
        int tailVersion,
        List<VersionRle.Run> versionRle,
        double reward,
        String prompt,
        String completion,
        List<Segment> segments,
        Double originalReward) {

    public DumpRecord {
        versionRle = List.copyOf(Objects.requireNonNull(versionRle, "version_rle"));
        Objects.requireNonNull(prompt, "prompt");
        Objects.requireNonNull(completion, "completion");
        segments = List.copyOf(Objects.requireNonNull(segments, "segments"));
    }

    /** What a run of the loss mask was: the role of a {@link Segment}. */
    public enum Role {
        /** The first run of non-generated tokens. */
        PROMPT("prompt"),
        /** A run of generated tokens (loss mask 1). */
        GEN("gen"),
        /** Every later run of non-generated tokens: tool output, user turns, templates. */
        CONTEXT("context");

        private final String wireName;

        Role(String wireName) {
            this.wireName = wireName;
        }

        /** The JSON spelling: {@code prompt}, {@code gen}, {@code context}. */
        public String wireName() {
            return wireName;
        }

        /** The role spelled {@code wireName}, or null when there is none. */
        public static Role fromWireName(String wireName) {
            for (Role r : values()) {
                if (r.wireName.equals(wireName)) {
                    return r;
                }
            }
            return null;
        }

        @Override
        public String toString() {
            return wireName;
        }
    }

    /**
     * One maximal run of a multi-turn row: {@code {"role": .., "len": .., "text": ..}}.
     *
     * @param len the number of tokens
     * @param text those tokens decoded, special tokens kept
     */
    public record Segment(Role role, int len, String text) {
        public Segment {
            Objects.requireNonNull(role, "role");
            Objects.requireNonNull(text, "text");
        }
    }

    /** True when the row has two or more generated runs and so carries {@code segments}. */
    public boolean isMultiTurn() {
        return !segments.isEmpty();
    }

    /** The record as one JSON line in semantics §7's key order, without the trailing newline. */
    public String toJson() {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("task_id", taskId);
        line.put("sample_idx", sampleIdx);
        line.put("seqlen", seqlen);
        line.put("prompt_len", promptLen);
        line.put("head_version", headVersion);
        line.put("tail_version", tailVersion);
        line.put(
                "version_rle",
                versionRle.stream().map(r -> List.of(r.version(), r.count())).toList());
        line.put("reward", reward);
        line.put("prompt", prompt);
        line.put("completion", completion);
        if (!segments.isEmpty()) {
            List<Map<String, Object>> segs = new ArrayList<>(segments.size());
            for (Segment seg : segments) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("role", seg.role().wireName());
                m.put("len", seg.len());
                m.put("text", seg.text());
                segs.add(m);
            }
            line.put("segments", segs);
        }
        if (originalReward != null) {
            line.put("original_reward", originalReward);
        }
        return PythonJson.dumps(line);
    }
}
