package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.trainer.HeldBatch;

class StatusLineTest {

    @Test
    void namesEachHolderOfBatchesWithItsCountAndTheSoonestReturn() {
        assertThat(StatusLine.held(List.of())).isEmpty();
        assertThat(StatusLine.held(List.of(
                        new HeldBatch(7, 4, "host-a:12:ab", true, 8_200),
                        new HeldBatch(8, 4, "host-a:12:ab", true, 2_100),
                        new HeldBatch(9, 4, "/10.0.0.5:51234", false, 590_000))))
                .isEqualTo(" | held: host-a:12:ab 2 (back in 3 s), /10.0.0.5:51234 1 (back in 590 s)");
    }
}
