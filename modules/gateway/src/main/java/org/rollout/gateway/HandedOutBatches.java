package org.rollout.gateway;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The ids of batches this gateway handed out and has not seen acknowledged, with the task ids of
 * their groups, so that an acknowledgement can say whether it was {@code known} and can retire the
 * tasks even on an engine that lost the batch with its collector's node. Bounded: past {@link #LIMIT} ids the oldest
 * is forgotten (a trainer that never acknowledges cannot grow it). Thread-safe.
 */
final class HandedOutBatches {
    static final int LIMIT = 4096;

    private final LinkedHashMap<Long, List<Long>> ids = new LinkedHashMap<>();

    synchronized void add(long batchId, List<Long> taskIds) {
        ids.remove(batchId);
        ids.put(batchId, List.copyOf(taskIds));
        if (ids.size() > LIMIT) {
            Iterator<Long> oldest = ids.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
    }

    /** Forgets {@code batchId}; its task ids when it was outstanding here, else null. */
    synchronized List<Long> remove(long batchId) {
        return ids.remove(batchId);
    }
}
