package org.rollout.core;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What {@link TrajectoryDumper#dump} did: wrote records, or skipped with a reason. A dump never
 * fails a rollout (semantics §6.4 step 6); the caller logs a {@link Skipped} as a warning with the task id.
 */
public sealed interface DumpResult {

    /** {@code records} lines were appended to {@code file}. */
    record Written(Path file, int records) implements DumpResult {
        public Written {
            Objects.requireNonNull(file, "file");
        }
    }

    /** Nothing was written; {@code reason} says why (e.g. {@code "dump dir is empty"}). */
    record Skipped(String reason) implements DumpResult {
        public Skipped {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
