package org.rollout.modelserver;

/** Hand-built weights whose behaviour a test can predict. */
final class TestWeights {
    static final int V = TinyLmWeights.VOCAB_SIZE;

    private final float[] bias = new float[V];
    private final float[] bigram = new float[V * V];
    private final float[] context = new float[V * V];

    static TestWeights zero() {
        return new TestWeights();
    }

    /** Makes {@code token} overwhelmingly likely after any context. */
    TestWeights favour(int token) {
        bias[token] = 30f;
        return this;
    }

    /** Makes {@code next} overwhelmingly likely right after {@code prev}. */
    TestWeights follow(int prev, int next) {
        bigram[prev * V + next] = 60f;
        return this;
    }

    TinyLmWeights build(int version) {
        return TinyLmWeights.of(version, TinyLmWeights.DEFAULT_DECAY, bias, bigram, context);
    }
}
