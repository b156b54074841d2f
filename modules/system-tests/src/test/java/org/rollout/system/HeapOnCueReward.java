package org.rollout.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import org.rollout.api.RewardFunction;

/**
 * The soak's reward function: 1 when the completion is not empty; but while the file {@link
 * #CUE} in the node's working directory holds this JVM's process id, every fourth question (as
 * {@link HeapHungryReward}) exhausts the heap instead ({@link OutOfMemoryError}). The soak writes
 * the file to put one node under heap pressure for a few seconds and removes it after.
 */
public final class HeapOnCueReward implements RewardFunction {
    /** The file that names the node under pressure, relative to the node's working directory. */
    static final String CUE = "heap-pressure.pid";

    private static final String PID = Long.toString(ProcessHandle.current().pid());

    public HeapOnCueReward() {}

    @Override
    public double reward(
            String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data) {
        if (HeapHungryReward.hungry(data.get("question")) && cued()) {
            HeapHungryReward.exhaustHeap();
        }
        return completion.isEmpty() ? 0.0 : 1.0;
    }

    private static boolean cued() {
        try {
            return Files.readString(Path.of(CUE)).strip().equals(PID);
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            return false; // being replaced or removed: no pressure
        }
    }
}
