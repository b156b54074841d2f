package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class StopReasonTest {

    @Test
    void fromWireReadsEveryKnownReason() {
        assertThat(StopReason.fromWire("stop")).isEqualTo(StopReason.STOP);
        assertThat(StopReason.fromWire("length")).isEqualTo(StopReason.LENGTH);
        assertThat(StopReason.fromWire("tool_calls")).isEqualTo(StopReason.TOOL_CALLS);
        assertThat(StopReason.fromWire("abort")).isEqualTo(StopReason.ABORT);
        for (StopReason r : StopReason.values()) {
            assertThat(StopReason.fromWire(r.wireName())).isSameAs(r);
            assertThat(r).hasToString(r.wireName());
        }
    }

    @Test
    void anUnknownReasonIsAnErrorNamingItAndTheKnownOnes() {
        assertThatThrownBy(() -> StopReason.fromWire("eos"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown stop reason \"eos\" (known: stop, length, tool_calls, abort)");
        assertThatThrownBy(() -> StopReason.fromWire("STOP"))
                .hasMessage("unknown stop reason \"STOP\" (known: stop, length, tool_calls, abort)");
        assertThatThrownBy(() -> StopReason.fromWire(null))
                .hasMessage("unknown stop reason null (known: stop, length, tool_calls, abort)");
    }

    @Test
    void onlyAbortIsNotFinal() {
        assertThat(StopReason.STOP.isFinal()).isTrue();
        assertThat(StopReason.LENGTH.isFinal()).isTrue();
        assertThat(StopReason.TOOL_CALLS.isFinal()).isTrue();
        assertThat(StopReason.ABORT.isFinal()).isFalse();
    }
}
