package org.rollout.modelserver;

/**
 * Why a generation ended, in SGLang's four shapes. The wire forms ({@code meta_info.finish_reason})
 * are {@code {"type":"stop","matched":258}}, {@code {"type":"stop","matched":"\n\n"}}, {@code
 * {"type":"length","length":64}} and {@code {"type":"abort","message":"…"}}.
 */
sealed interface FinishReason {
    /** {@code stop}, {@code length} or {@code abort}. */
    String type();

    /** EOS or a stop token id was sampled (it is the last output token). */
    record MatchedToken(int token) implements FinishReason {
        @Override
        public String type() {
            return "stop";
        }
    }

    /** A stop string appeared in the decoded output. */
    record MatchedString(String matched) implements FinishReason {
        @Override
        public String type() {
            return "stop";
        }
    }

    /** {@code max_new_tokens} tokens were generated. */
    record Length(int length) implements FinishReason {
        @Override
        public String type() {
            return "length";
        }
    }

    /** Aborted (pause, abort request, weight update, disconnect, shutdown); the output is partial. */
    record Abort(String message) implements FinishReason {
        @Override
        public String type() {
            return "abort";
        }
    }
}
