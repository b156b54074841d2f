package org.rollout.system;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.RewardFunction;

/**
 * A reward function that, for every fourth question (by the question's hash), keeps allocating
 * 1 MiB arrays until the node's heap is exhausted and the JVM throws {@link OutOfMemoryError};
 * for the others it is 1 when the completion is not empty. Loaded by a node from {@code
 * rollout.classpath} ({@link HeapPressureTest}); the arrays are dropped when the error unwinds.
 */
public final class HeapHungryReward implements RewardFunction {
    private static final int CHUNK = 1 << 20;

    public HeapHungryReward() {}

    /** Whether the item with this question is one whose reward exhausts the heap. */
    static boolean hungry(Object question) {
        return Math.floorMod(String.valueOf(question).hashCode(), 4) == 0;
    }

    @Override
    public double reward(
            String prompt, String completion, int[] promptIds, int[] completionIds, Map<String, Object> data) {
        if (hungry(data.get("question"))) {
            exhaustHeap();
        }
        return completion.isEmpty() ? 0.0 : 1.0;
    }

    /** Allocates 1 MiB arrays, holding every one, until {@link OutOfMemoryError}. */
    static void exhaustHeap() {
        List<byte[]> held = new ArrayList<>();
        while (true) {
            byte[] chunk = new byte[CHUNK];
            chunk[held.size() % CHUNK] = 1;
            held.add(chunk);
        }
    }
}
