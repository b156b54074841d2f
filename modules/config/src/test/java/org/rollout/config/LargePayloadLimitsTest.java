package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.load;

import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;

/** The ranges of the large-payload keys, checked at load (the frame size is checked by the cluster module). */
class LargePayloadLimitsTest {

    @Test
    void aChunkSizeOutsideItsRangeIsRefusedAtLoad() {
        assertThatThrownBy(() -> load("rollout.large_payload_chunk_size=100"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.large_payload_chunk_size': 100 (allowed: a byte size from 4 KiB"
                        + " to 64 MiB)");
    }

    @Test
    void aThresholdThatIsNotAByteSizeIsRefusedAtLoad() {
        assertThatThrownBy(() -> load("rollout.large_payload_threshold=lots"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.large_payload_threshold': \"lots\" (allowed: a byte size >= 0"
                        + " (e.g. 131072 or \"128 KiB\"))");
    }
}
