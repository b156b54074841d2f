package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The coordinator's choice of runner for a group ({@code TaskLedger.leastLoaded}). */
class RunnerPlacementTest {

    private static TaskLedger.RunnerLoad runner(String node, int capacity) {
        return new TaskLedger.RunnerLoad(node, capacity);
    }

    /** Places one group and counts it as dispatched; {@code finish} ends it at once. */
    private static String place(Map<String, TaskLedger.RunnerLoad> runners, boolean finish) {
        String node = TaskLedger.leastLoaded(runners, false);
        TaskLedger.RunnerLoad s = runners.get(node);
        s.dispatched++;
        if (!finish) {
            s.inFlight++;
        }
        return node;
    }

    @Test
    void shouldSpreadGroupsThatEndBeforeTheNextIsAdmittedOverEveryRunner() {
        // Groups shorter than the time between admissions: every runner is idle at each admission.
        // Before the tie-break, the runner that joined first took all of them.
        Map<String, TaskLedger.RunnerLoad> runners = new LinkedHashMap<>();
        runners.put("node-1", runner("node-1", 4));
        runners.put("node-2", runner("node-2", 4));
        runners.put("node-3", runner("node-3", 4));
        Map<String, Integer> placed = new TreeMap<>();
        for (int i = 0; i < 30; i++) {
            placed.merge(place(runners, true), 1, Integer::sum);
        }
        assertThat(placed).containsExactlyInAnyOrderEntriesOf(Map.of("node-1", 10, "node-2", 10, "node-3", 10));
    }

    @Test
    void shouldStillPreferTheLeastLoadedRunnerRelativeToItsCapacity() {
        Map<String, TaskLedger.RunnerLoad> runners = new LinkedHashMap<>();
        runners.put("small", runner("small", 2));
        runners.put("big", runner("big", 6));
        Map<String, Integer> placed = new TreeMap<>();
        for (int i = 0; i < 8; i++) {
            placed.merge(place(runners, false), 1, Integer::sum);
        }
        // Filled in proportion to capacity, and neither over it.
        assertThat(placed).containsExactlyInAnyOrderEntriesOf(Map.of("big", 6, "small", 2));
        assertThat(TaskLedger.leastLoaded(runners, false)).isNull();
        assertThat(TaskLedger.leastLoaded(runners, true)).isNotNull();
    }
}
