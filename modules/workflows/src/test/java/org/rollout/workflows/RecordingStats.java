package org.rollout.workflows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.StatsRecorder;

/** A {@link StatsRecorder} that keeps every value, in order. */
final class RecordingStats implements StatsRecorder {
    private final List<Map.Entry<String, Double>> values = new ArrayList<>();

    @Override
    public synchronized void scalar(String key, double value) {
        values.add(Map.entry(key, value));
    }

    synchronized List<Map.Entry<String, Double>> values() {
        return List.copyOf(values);
    }
}
