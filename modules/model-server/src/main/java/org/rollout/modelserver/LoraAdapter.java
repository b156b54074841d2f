package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * A low-rank adapter of the tiny model (docs/model-server.md, "LoRA adapters"): {@code scale · A·B}
 * added to the bigram matrix P (V×V), with A of V×r and B of r×V. Applying it gives ordinary weights
 * ({@link #applyTo}), so every generation path uses it unchanged.
 *
 * <p>Adapter file: one JSON object {@code {"format": "rollout-tiny-lora", "rank": r, "scale": s,
 * "a": [V·r numbers, row-major], "b": [r·V numbers, row-major]}}. Immutable.
 */
public final class LoraAdapter {
    /** The {@code format} field of an adapter file. */
    public static final String FORMAT = "rollout-tiny-lora";

    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private final int rank;
    private final float scale;
    private final float[] a;
    private final float[] b;

    private LoraAdapter(int rank, float scale, float[] a, float[] b) {
        this.rank = rank;
        this.scale = scale;
        this.a = a;
        this.b = b;
    }

    /** An adapter of rank {@code rank} with N(0, std²) entries drawn from {@code seed}. */
    public static LoraAdapter seeded(long seed, int rank, double std, float scale) {
        if (rank < 1) {
            throw new IllegalArgumentException("rank must be >= 1, got " + rank);
        }
        SplittableRandom r = new SplittableRandom(seed);
        float[] a = new float[V * rank];
        float[] b = new float[rank * V];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) (gaussian(r) * std);
        }
        for (int i = 0; i < b.length; i++) {
            b[i] = (float) (gaussian(r) * std);
        }
        return new LoraAdapter(rank, scale, a, b);
    }

    private static double gaussian(SplittableRandom r) {
        double u = 1.0 - r.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r.nextDouble());
    }

    public int rank() {
        return rank;
    }

    /** {@code base} with P replaced by {@code P + scale · A·B}; same version, decay, b and C. */
    public TinyLmWeights applyTo(TinyLmWeights base) {
        float[] p = base.bigram.clone();
        for (int i = 0; i < V; i++) {
            for (int k = 0; k < rank; k++) {
                float aik = scale * a[i * rank + k];
                if (aik == 0) {
                    continue;
                }
                int bo = k * V;
                int po = i * V;
                for (int j = 0; j < V; j++) {
                    p[po + j] += aik * b[bo + j];
                }
            }
        }
        return TinyLmWeights.adopt(base.version(), base.decay(), base.bias, p, base.context);
    }

    /** Writes the adapter file. */
    public void write(Path path) throws IOException {
        ObjectNode o = Json.object();
        o.put("format", FORMAT);
        o.put("rank", rank);
        o.put("scale", scale);
        ArrayNode an = o.putArray("a");
        for (float x : a) {
            an.add(x);
        }
        ArrayNode bn = o.putArray("b");
        for (float x : b) {
            bn.add(x);
        }
        Files.write(path, Json.bytes(o));
    }

    /**
     * Reads an adapter file.
     *
     * @throws IOException naming the path and the defect
     */
    public static LoraAdapter read(Path path) throws IOException {
        JsonNode o;
        try {
            o = Json.MAPPER.readTree(Files.readAllBytes(path));
        } catch (IOException e) {
            throw new IOException("LoRA adapter " + path + ": cannot read it as JSON: " + e.getMessage(), e);
        }
        if (o == null || !o.isObject() || !FORMAT.equals(o.path("format").asText())) {
            throw new IOException("LoRA adapter " + path + ": not a " + FORMAT + " file (its format field is "
                    + (o == null ? "missing" : o.path("format")) + ")");
        }
        int rank = o.path("rank").asInt(0);
        if (rank < 1 || rank > V) {
            throw new IOException("LoRA adapter " + path + ": rank must be in [1, " + V + "], got " + o.get("rank"));
        }
        float scale = (float) o.path("scale").asDouble(1.0);
        return new LoraAdapter(rank, scale, floats(o, "a", V * rank, path), floats(o, "b", rank * V, path));
    }

    private static float[] floats(JsonNode o, String field, int n, Path path) throws IOException {
        JsonNode arr = o.get(field);
        if (arr == null || !arr.isArray() || arr.size() != n) {
            throw new IOException("LoRA adapter " + path + ": " + field + " must be a list of " + n + " numbers, got "
                    + (arr == null ? "none" : arr.isArray() ? arr.size() + " entries" : arr.getNodeType()));
        }
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            JsonNode x = arr.get(i);
            if (!x.isNumber() || !Double.isFinite(x.asDouble())) {
                throw new IOException("LoRA adapter " + path + ": " + field + "[" + i + "] is not a finite number");
            }
            out[i] = (float) x.asDouble();
        }
        return out;
    }
}
