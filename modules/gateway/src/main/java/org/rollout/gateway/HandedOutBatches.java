package org.rollout.gateway;

import java.util.Iterator;
import java.util.LinkedHashSet;

/**
 * The ids of batches this gateway handed out and has not seen acknowledged, so that an
 * acknowledgement can say whether it was {@code known}. Bounded: past {@link #LIMIT} ids the oldest
 * is forgotten (a trainer that never acknowledges cannot grow it). Thread-safe.
 */
final class HandedOutBatches {
    static final int LIMIT = 4096;

    private final LinkedHashSet<Long> ids = new LinkedHashSet<>();

    synchronized void add(long batchId) {
        ids.remove(batchId);
        ids.add(batchId);
        if (ids.size() > LIMIT) {
            Iterator<Long> oldest = ids.iterator();
            oldest.next();
            oldest.remove();
        }
    }

    /** Forgets {@code batchId}; true when it was outstanding here. */
    synchronized boolean remove(long batchId) {
        return ids.remove(batchId);
    }
}
