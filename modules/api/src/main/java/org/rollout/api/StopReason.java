package org.rollout.api;

/**
 * Why a generation ended (semantics §1.4).
 *
 * <ul>
 *   <li>{@link #STOP}: an EOS or stop token/string was produced.
 *   <li>{@link #LENGTH}: the token budget was used up.
 *   <li>{@link #TOOL_CALLS}: the OpenAI-compatible layer parsed a tool call.
 *   <li>{@link #ABORT}: the server interrupted this segment (a weight-update pause). The engine
 *       resumes after it, so an {@code ABORT} never escapes {@link InferenceEngine#generate}: when
 *       the budget is spent it becomes {@code LENGTH}.
 * </ul>
 *
 * <p>Unlike AReaL, a stop reason the engine does not know is an error, not a silent re-prompt loop.
 */
public enum StopReason {
    STOP("stop"),
    LENGTH("length"),
    TOOL_CALLS("tool_calls"),
    ABORT("abort");

    private final String wireName;

    StopReason(String wireName) {
        this.wireName = wireName;
    }

    /** The name on the wire and in dumps: {@code stop}, {@code length}, {@code tool_calls}, {@code abort}. */
    public String wireName() {
        return wireName;
    }

    /** True for the reasons that end a generation: stop, length and tool_calls. */
    public boolean isFinal() {
        return this != ABORT;
    }

    /**
     * The reason named {@code wire}.
     *
     * @throws IllegalArgumentException for any other string, naming it and the known values
     */
    public static StopReason fromWire(String wire) {
        for (StopReason r : values()) {
            if (r.wireName.equals(wire)) {
                return r;
            }
        }
        throw new IllegalArgumentException("unknown stop reason " + (wire == null ? "null" : "\"" + wire + "\"")
                + " (known: stop, length, tool_calls, abort)");
    }

    @Override
    public String toString() {
        return wireName;
    }
}
