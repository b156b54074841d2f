package org.rollout.workflows;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;

/**
 * An {@link InferenceEngine} that answers each request with the next scripted output and records
 * the requests: what a workflow sent, and what it got back, are both known exactly.
 */
final class ScriptedEngine implements InferenceEngine {
    /** One scripted answer: output tokens, their logprobs and versions, and the stop reason. */
    record Output(int[] tokens, float[] logprobs, int[] versions, StopReason stop) {}

    private final Deque<Output> outputs = new ArrayDeque<>();
    private final List<ModelRequest> requests = new ArrayList<>();

    /** Scripts an output whose logprob at i is −(i+1)/10 and whose versions are all {@code version}. */
    ScriptedEngine then(int[] tokens, int version, StopReason stop) {
        float[] logprobs = new float[tokens.length];
        int[] versions = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            logprobs[i] = -(i + 1) / 10f;
            versions[i] = version;
        }
        outputs.add(new Output(tokens, logprobs, versions, stop));
        return this;
    }

    ScriptedEngine then(Output output) {
        outputs.add(output);
        return this;
    }

    @Override
    public synchronized ModelResponse generate(ModelRequest request) {
        requests.add(request);
        Output o = outputs.poll();
        if (o == null) {
            throw new AssertionError("unexpected request " + requests.size() + ": nothing scripted");
        }
        return ModelResponse.of(request.inputIds(), o.tokens, o.logprobs, o.versions, o.stop, Duration.ofMillis(1));
    }

    @Override
    public int version() {
        return 0;
    }

    synchronized List<ModelRequest> requests() {
        return List.copyOf(requests);
    }

    static int[] concat(int[]... parts) {
        int n = 0;
        for (int[] p : parts) {
            n += p.length;
        }
        int[] out = new int[n];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    static int[] filled(int value, int count) {
        int[] out = new int[count];
        java.util.Arrays.fill(out, value);
        return out;
    }
}
