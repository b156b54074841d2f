package org.rollout.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WaitReportTest {

    private static RolloutStatus withHeld(List<HeldBatch> held) {
        return new RolloutStatus(3, 0, 6, 0, 0, 0, held.size(), 0, 60, Map.of(), Map.of(), 0, held);
    }

    @Test
    void namesTheBatchesOtherTrainersHoldTheirHoldersAndWhenTheyComeBack() {
        RolloutStatus s = withHeld(List.of(
                new HeldBatch(7, 4, "host-a:12:ab", true, 8_200),
                new HeldBatch(8, 4, "/127.0.0.1:5000", false, 590_000),
                new HeldBatch(9, 4, "me", true, 14_000)));
        assertThat(WaitReport.line(31.2, s, "me"))
                .isEqualTo("no batch for 31 s; 2 batch(es) held by other trainers: batch 7 (4 groups) held by"
                        + " host-a:12:ab, leased, back in 9 s; batch 8 (4 groups) held by /127.0.0.1:5000, back in"
                        + " 590 s; 0 group(s) buffered, capacity 0");
        assertThat(WaitReport.line(31, withHeld(List.of()), "me"))
                .startsWith("no batch for 31 s; no batch is held by another trainer");
    }
}
