package org.rollout.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * AReaL's {@code check_trajectory_format} (semantics §3.5, on when {@code check_trajectory_format=True}):
 * checks each raw episode result before conversion, and learns the key set of the first tensor
 * result so that later results missing any of those keys are caught.
 *
 * <pre>
 *   Rejected                     fine
 *   Interactions, non-empty      fine               empty            → error
 *   Trajectory, no keys          → error
 *              no input_ids or attention_mask       → error (naming the missing keys)
 *              input_ids not 2-D                    → error
 *              other tensor: dim 0 ≠ B, dim 1 ≠ L   → warning only
 *              first one checked                    its keys become expected_keys
 *              later: a key of expected_keys absent → error (naming the missing keys)
 * </pre>
 *
 * <p>Errors are {@link WorkflowContractException}s whose message names the task, the slot and
 * the key. Warnings are returned for the caller to log with its own context; nothing is logged
 * here except, once, the learned key set. Rank-0 tensors (such as {@code rollout_reward}) have no
 * dims to compare and are not warned about (AReaL would fail indexing them). A result that fails
 * the check does not teach its keys.
 *
 * <p>Thread-safe: several groups check concurrently. Learning is a compare-and-set, so exactly one
 * result sets {@code expected_keys}, and every other result, including one that raced it, is
 * checked against them.
 */
public final class TrajectoryFormatChecker {
    private static final Logger LOG = LoggerFactory.getLogger(TrajectoryFormatChecker.class);
    private static final List<String> REQUIRED_KEYS = List.of(TensorDict.INPUT_IDS, TensorDict.ATTENTION_MASK);

    private final AtomicReference<Set<String>> expectedKeys = new AtomicReference<>();

    /**
     * Checks one slot's result.
     *
     * @param taskId the task the result belongs to, for messages
     * @param slot the slot (sample index) inside the group, for messages
     * @return warnings, each naming the task, slot and tensor; empty when there are none
     * @throws WorkflowContractException when the result breaks a rule above
     */
    public List<String> check(long taskId, int slot, EpisodeResult result) {
        Objects.requireNonNull(result, "result");
        return switch (result) {
            case EpisodeResult.Rejected ignored -> List.of();
            case EpisodeResult.Interactions interactions -> {
                if (interactions.byId().isEmpty()) {
                    throw contract(taskId, slot, "an interaction result must hold at least one interaction, got none");
                }
                yield List.of();
            }
            case EpisodeResult.Trajectory trajectory -> checkTensors(taskId, slot, trajectory.data());
        };
    }

    /** The key set learned from the first tensor result that passed, if one has. */
    public Optional<Set<String>> expectedKeys() {
        return Optional.ofNullable(expectedKeys.get());
    }

    private List<String> checkTensors(long taskId, int slot, TensorDict d) {
        if (d.isEmpty()) {
            throw contract(taskId, slot, "trajectory has no keys; it needs at least " + quoted(REQUIRED_KEYS));
        }
        List<String> missing = REQUIRED_KEYS.stream().filter(k -> !d.has(k)).toList();
        if (!missing.isEmpty()) {
            throw contract(
                    taskId,
                    slot,
                    "trajectory is missing required key(s) " + quoted(missing) + " (keys: " + d.keys() + ")");
        }
        Tensor ids = d.get(TensorDict.INPUT_IDS);
        if (ids.rank() != 2) {
            throw contract(
                    taskId,
                    slot,
                    "tensor 'input_ids' must be 2-D [batch_size, max_seqlen], got " + ids.rank() + "-D "
                            + ids.describe());
        }
        int batch = ids.dim(0);
        int seqlen = ids.dim(1);
        List<String> warnings = new ArrayList<>();
        d.forEach((key, t) -> {
            if (t.rank() >= 1 && t.dim(0) != batch) {
                warnings.add(where(taskId, slot) + "dim 0 of tensor '" + key + "' is " + t.dim(0)
                        + ", not the batch size of input_ids (" + batch + ")");
            }
            if (t.rank() >= 2 && t.dim(1) != seqlen) {
                warnings.add(where(taskId, slot) + "dim 1 of tensor '" + key + "' is " + t.dim(1)
                        + ", not the max seqlen of input_ids (" + seqlen + ")");
            }
        });

        Set<String> keys = Collections.unmodifiableSet(new LinkedHashSet<>(d.keys()));
        Set<String> expected = expectedKeys.get();
        if (expected == null) {
            if (expectedKeys.compareAndSet(null, keys)) {
                LOG.info("trajectory format check: task {} slot {} sets the expected keys {}", taskId, slot, keys);
                return List.copyOf(warnings);
            }
            expected = expectedKeys.get(); // another result won the race: check against its keys
        }
        List<String> absent = expected.stream().filter(k -> !keys.contains(k)).toList();
        if (!absent.isEmpty()) {
            throw contract(
                    taskId,
                    slot,
                    "trajectory is missing key(s) " + quoted(absent) + " that the first checked trajectory had"
                            + " (expected: " + expected + ", got: " + keys + ")");
        }
        return List.copyOf(warnings);
    }

    private static String where(long taskId, int slot) {
        return "task " + taskId + " slot " + slot + ": ";
    }

    private static WorkflowContractException contract(long taskId, int slot, String problem) {
        return new WorkflowContractException(where(taskId, slot) + problem);
    }

    private static String quoted(List<String> keys) {
        return "'" + String.join("', '", keys) + "'";
    }
}
