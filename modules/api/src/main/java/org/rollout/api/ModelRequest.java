package org.rollout.api;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * One generation request (semantics §1.1): a prompt as token ids and its sampling parameters.
 *
 * <p>The {@code rid} keys server stickiness: every segment of one generation (after an interruption)
 * goes back to the server that served the first, so its prefix cache can help. A caller that wants
 * KV reuse across turns may reuse a rid on purpose; by default each request gets a fresh UUID.
 *
 * <p>Immutable: the engine works on its own copies (AReaL's {@code copy()}), so a caller's request
 * is never changed. {@code metadata} is free-form and copied shallowly.
 */
public final class ModelRequest {
    /**
     * A {@link #metadata()} key whose string value names the trajectory the request belongs to:
     * with an affine {@code routing_strategy}, requests with the same value go to the same server
     * while its load allows (the agent proxy sets it to its session id). Requests made inside an
     * episode need not set it: the episode's task and sample name their trajectory.
     */
    public static final String AFFINITY_KEY = "affinity";

    private final String rid;
    private final int[] inputIds;
    private final GenerationConfig gconfig;
    private final Map<String, Object> metadata;

    private ModelRequest(String rid, int[] inputIds, GenerationConfig gconfig, Map<String, Object> metadata) {
        this.rid = Objects.requireNonNull(rid, "rid");
        this.inputIds = Objects.requireNonNull(inputIds, "input_ids");
        this.gconfig = Objects.requireNonNull(gconfig, "gconfig");
        this.metadata = Map.copyOf(Objects.requireNonNull(metadata, "metadata"));
        if (rid.isBlank()) {
            throw new IllegalArgumentException("rid must not be blank");
        }
    }

    /** A request with a fresh random rid. */
    public static ModelRequest of(int[] inputIds, GenerationConfig gconfig) {
        return new ModelRequest(newRid(), inputIds.clone(), gconfig, Map.of());
    }

    /** A request with the given rid. */
    public static ModelRequest of(String rid, int[] inputIds, GenerationConfig gconfig) {
        return new ModelRequest(rid, inputIds.clone(), gconfig, Map.of());
    }

    /** A fresh random request id (a UUID4 without dashes, as AReaL's {@code uuid4().hex}). */
    public static String newRid() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    public String rid() {
        return rid;
    }

    /** A copy of the prompt token ids. */
    public int[] inputIds() {
        return inputIds.clone();
    }

    /** The prompt length. */
    public int inputLength() {
        return inputIds.length;
    }

    /** The prompt token at {@code i}. */
    public int inputId(int i) {
        return inputIds[i];
    }

    public GenerationConfig gconfig() {
        return gconfig;
    }

    /** Free-form metadata, immutable. */
    public Map<String, Object> metadata() {
        return metadata;
    }

    public ModelRequest withInputIds(int[] ids) {
        return new ModelRequest(rid, ids.clone(), gconfig, metadata);
    }

    public ModelRequest withGconfig(GenerationConfig g) {
        return new ModelRequest(rid, inputIds, g, metadata);
    }

    public ModelRequest withRid(String newRid) {
        return new ModelRequest(newRid, inputIds, gconfig, metadata);
    }

    public ModelRequest withMetadata(Map<String, Object> m) {
        return new ModelRequest(rid, inputIds, gconfig, m);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ModelRequest r
                && rid.equals(r.rid)
                && Arrays.equals(inputIds, r.inputIds)
                && gconfig.equals(r.gconfig)
                && metadata.equals(r.metadata);
    }

    @Override
    public int hashCode() {
        return Objects.hash(rid, Arrays.hashCode(inputIds), gconfig, metadata);
    }

    @Override
    public String toString() {
        return "ModelRequest{rid=" + rid + ", input_len=" + inputIds.length + ", max_new_tokens="
                + gconfig.maxNewTokens() + "}";
    }
}
