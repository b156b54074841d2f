package org.rollout.modelserver;

/**
 * Turns weights and a gradient into new weights. Both optimizers <em>ascend</em>: the gradient is
 * that of an objective to maximise (Σ advantage · log p, see {@link TinyLm#accumulateGradient}); to
 * minimise a loss, accumulate it with negated scales. The result keeps the input's weight version:
 * the trainer labels it with {@link TinyLmWeights#withVersion} when it publishes.
 *
 * <p>{@link #sgd} is stateless. {@link #adam} keeps its moment estimates and step count in the
 * instance, so use one instance per trained model, from one thread at a time.
 */
public sealed interface TinyLmOptimizer permits TinyLmOptimizer.Sgd, TinyLmOptimizer.Adam {

    /** New weights one step up {@code gradient} from {@code weights}. */
    TinyLmWeights step(TinyLmWeights weights, TinyLmGradient gradient);

    /** Plain gradient ascent: {@code θ ← θ + learningRate · g}. */
    static Sgd sgd(double learningRate) {
        return new Sgd(learningRate);
    }

    /** Adam with {@code beta1 = 0.9}, {@code beta2 = 0.999}, {@code epsilon = 1e-8}. */
    static Adam adam(double learningRate) {
        return new Adam(learningRate, 0.9, 0.999, 1e-8);
    }

    /** Adam (Kingma and Ba, with bias correction), ascending. */
    static Adam adam(double learningRate, double beta1, double beta2, double epsilon) {
        return new Adam(learningRate, beta1, beta2, epsilon);
    }

    /** Plain SGD; stateless and thread-safe. */
    final class Sgd implements TinyLmOptimizer {
        private final double learningRate;

        Sgd(double learningRate) {
            if (!(learningRate > 0) || Double.isInfinite(learningRate)) {
                throw new IllegalArgumentException("learning_rate must be finite and > 0, got " + learningRate);
            }
            this.learningRate = learningRate;
        }

        @Override
        public TinyLmWeights step(TinyLmWeights w, TinyLmGradient g) {
            return TinyLmWeights.adopt(
                    w.version(),
                    w.decay(),
                    apply(w.bias, g.bias),
                    apply(w.bigram, g.bigram),
                    apply(w.context, g.context));
        }

        private float[] apply(float[] theta, double[] grad) {
            float[] out = new float[theta.length];
            for (int i = 0; i < theta.length; i++) {
                out[i] = (float) (theta[i] + learningRate * grad[i]);
            }
            return out;
        }

        @Override
        public String toString() {
            return "Sgd{learning_rate=" + learningRate + "}";
        }
    }

    /** Adam; holds first and second moment estimates; not thread-safe. */
    final class Adam implements TinyLmOptimizer {
        private static final int V = TinyLmWeights.VOCAB_SIZE;

        private final double learningRate;
        private final double beta1;
        private final double beta2;
        private final double epsilon;
        private final double[][] m = {new double[V], new double[V * V], new double[V * V]};
        private final double[][] v = {new double[V], new double[V * V], new double[V * V]};
        private int steps;

        Adam(double learningRate, double beta1, double beta2, double epsilon) {
            if (!(learningRate > 0) || Double.isInfinite(learningRate)) {
                throw new IllegalArgumentException("learning_rate must be finite and > 0, got " + learningRate);
            }
            if (!(beta1 >= 0 && beta1 < 1)) {
                throw new IllegalArgumentException("beta1 must be in [0, 1), got " + beta1);
            }
            if (!(beta2 >= 0 && beta2 < 1)) {
                throw new IllegalArgumentException("beta2 must be in [0, 1), got " + beta2);
            }
            if (!(epsilon > 0)) {
                throw new IllegalArgumentException("epsilon must be > 0, got " + epsilon);
            }
            this.learningRate = learningRate;
            this.beta1 = beta1;
            this.beta2 = beta2;
            this.epsilon = epsilon;
        }

        /** How many steps this optimizer has taken. */
        public int steps() {
            return steps;
        }

        @Override
        public TinyLmWeights step(TinyLmWeights w, TinyLmGradient g) {
            steps++;
            double c1 = 1 - Math.pow(beta1, steps);
            double c2 = 1 - Math.pow(beta2, steps);
            return TinyLmWeights.adopt(
                    w.version(),
                    w.decay(),
                    apply(w.bias, g.bias, m[0], v[0], c1, c2),
                    apply(w.bigram, g.bigram, m[1], v[1], c1, c2),
                    apply(w.context, g.context, m[2], v[2], c1, c2));
        }

        private float[] apply(float[] theta, double[] grad, double[] m1, double[] m2, double c1, double c2) {
            float[] out = new float[theta.length];
            for (int i = 0; i < theta.length; i++) {
                double gi = grad[i];
                m1[i] = beta1 * m1[i] + (1 - beta1) * gi;
                m2[i] = beta2 * m2[i] + (1 - beta2) * gi * gi;
                double mHat = m1[i] / c1;
                double vHat = m2[i] / c2;
                out[i] = (float) (theta[i] + learningRate * mHat / (Math.sqrt(vHat) + epsilon));
            }
            return out;
        }

        @Override
        public String toString() {
            return "Adam{learning_rate=" + learningRate + ", beta1=" + beta1 + ", beta2=" + beta2 + ", epsilon="
                    + epsilon + ", steps=" + steps + "}";
        }
    }
}
