package org.rollout.agent;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.Tokenizer;
import org.rollout.core.ByteLevelTokenizer;

/**
 * An engine that answers with scripted texts (in the built-in vocabulary unless told otherwise), so a test chooses exactly
 * what the "model" says (a tool call, say). Each output token gets logprob {@code -0.01·(i+1)} and
 * the engine's current version. Thread-safe.
 */
public final class ScriptedEngine implements InferenceEngine {
    private final Deque<Object> script = new ArrayDeque<>();
    private final List<ModelRequest> requests = new ArrayList<>();
    private final CountDownLatch blocked = new CountDownLatch(1);
    private final Tokenizer tokenizer;
    private volatile int version;

    /** An engine whose replies are encoded with the built-in tokenizer. */
    public ScriptedEngine() {
        this(ByteLevelTokenizer.INSTANCE);
    }

    /** An engine whose replies are encoded with {@code tokenizer} and end in its EOS. */
    public ScriptedEngine(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** An engine that answers each request with the next text followed by EOS. */
    public static ScriptedEngine replying(String... texts) {
        ScriptedEngine e = new ScriptedEngine();
        for (String t : texts) {
            e.thenReply(t);
        }
        return e;
    }

    /** The next request gets {@code text} then EOS. */
    public synchronized ScriptedEngine thenReply(String text) {
        script.add(text);
        return this;
    }

    /** The next request fails with {@code failure}. */
    public synchronized ScriptedEngine thenFail(RuntimeException failure) {
        script.add(failure);
        return this;
    }

    /** The next request blocks until its thread is interrupted. */
    public synchronized ScriptedEngine thenBlock() {
        script.add(Block.INSTANCE);
        return this;
    }

    private enum Block {
        INSTANCE
    }

    /** Counts down when a request starts blocking. */
    public CountDownLatch blocked() {
        return blocked;
    }

    public void setVersion(int v) {
        version = v;
    }

    public synchronized List<ModelRequest> requests() {
        return List.copyOf(requests);
    }

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        Object next;
        synchronized (this) {
            requests.add(request);
            next = script.poll();
        }
        if (next == null) {
            throw new IllegalStateException("the scripted engine has no reply left for rid " + request.rid());
        }
        if (next instanceof RuntimeException failure) {
            throw failure;
        }
        if (next == Block.INSTANCE) {
            blocked.countDown();
            new CountDownLatch(1).await();
        }
        int[] text = tokenizer.encode((String) next);
        int budget = request.gconfig().maxNewTokens();
        boolean stop = text.length + 1 <= budget;
        int n = stop ? text.length + 1 : budget;
        int[] out = new int[n];
        System.arraycopy(text, 0, out, 0, Math.min(text.length, n));
        if (stop) {
            out[n - 1] = tokenizer.eosTokenId();
        }
        float[] logprobs = new float[n];
        int[] versions = new int[n];
        for (int i = 0; i < n; i++) {
            logprobs[i] = -0.01f * (i + 1);
            versions[i] = version;
        }
        return ModelResponse.of(
                request.inputIds(),
                out,
                logprobs,
                versions,
                stop ? StopReason.STOP : StopReason.LENGTH,
                Duration.ofMillis(1));
    }

    @Override
    public int version() {
        return version;
    }
}
