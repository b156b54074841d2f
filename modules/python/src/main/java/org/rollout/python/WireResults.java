package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.api.BoolTensor;
import org.rollout.api.EpisodeResult;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.Interaction;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.WorkflowContractException;

/**
 * What a Python episode returned, from the worker channel's {@code result} into an {@link
 * EpisodeResult}: {@code none} → rejected, {@code tensors} → a trajectory, {@code interactions} →
 * interactions. Every error is a {@link WorkflowContractException} that names the workflow and the
 * tensor or interaction at fault. Stateless.
 *
 * <pre>
 *   numpy dtype                         engine dtype
 *   int32, int16, int8, uint8, uint16   int32
 *   int64, uint32                       int64
 *   float32, float16, float64           float32 (AReaL trains on float32 rewards and logprobs)
 *   bool                                bool
 * </pre>
 */
final class WireResults {
    private WireResults() {}

    /**
     * @param workflow the workflow's {@code module:Class}, for messages
     * @throws WorkflowContractException for an unknown kind, dtype, a rank above 2, data whose
     *     length is not its shape's, or an interaction missing a field
     */
    static EpisodeResult decode(String workflow, JsonNode result) {
        String kind = result == null ? "" : result.path("kind").asText();
        return switch (kind) {
            case "none" -> EpisodeResult.rejected("returned_none");
            case "tensors" -> EpisodeResult.trajectory(tensors(workflow, result.path("tensors")));
            case "interactions" -> EpisodeResult.interactions(interactions(workflow, result.path("interactions")));
            default ->
                throw new WorkflowContractException(workflow + ".arun_episode: the worker sent a result of kind '"
                        + kind + "'; expected none, tensors or interactions");
        };
    }

    static TensorDict tensors(String workflow, JsonNode tensors) {
        if (!tensors.isObject() || tensors.isEmpty()) {
            throw new WorkflowContractException(
                    workflow + ".arun_episode returned an empty dict; expected a dict of tensors or None");
        }
        TensorDict.Builder b = TensorDict.builder();
        for (var it = tensors.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            try {
                b.put(e.getKey(), tensor(e.getValue()));
            } catch (IllegalArgumentException | IllegalStateException ex) {
                throw new WorkflowContractException(
                        workflow + ".arun_episode returned tensor '" + e.getKey() + "': " + ex.getMessage(), ex);
            }
        }
        return b.build();
    }

    private static Tensor tensor(JsonNode t) {
        String dtype = t.path("dtype").asText();
        JsonNode shapeNode = t.path("shape");
        int[] shape = new int[shapeNode.size()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = shapeNode.get(i).asInt();
        }
        if (shape.length > 2) {
            throw new IllegalArgumentException("it has shape " + Arrays.toString(shape)
                    + "; trajectory tensors have rank 0, 1 or 2 ([batch] or [batch, length])");
        }
        long n = 1;
        for (int d : shape) {
            n *= d;
        }
        byte[] bytes = Base64.getDecoder().decode(t.path("data").asText());
        int width = switch (dtype) {
            case "bool", "int8", "uint8" -> 1;
            case "int16", "uint16", "float16" -> 2;
            case "int32", "uint32", "float32" -> 4;
            case "int64", "float64" -> 8;
            default ->
                throw new IllegalArgumentException("dtype " + dtype
                        + " is not one the engine trains on (ints, floats and bool; see docs/python-workflows.md)");
        };
        if (bytes.length != n * width) {
            throw new IllegalArgumentException(
                    "its " + bytes.length + " bytes of " + dtype + " do not fill shape " + Arrays.toString(shape));
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int count = (int) n;
        return switch (dtype) {
            case "bool" -> {
                boolean[] v = new boolean[count];
                for (int i = 0; i < count; i++) {
                    v[i] = buf.get() != 0;
                }
                yield BoolTensor.of(v, shape);
            }
            case "int8", "uint8", "int16", "uint16", "int32" -> {
                int[] v = new int[count];
                for (int i = 0; i < count; i++) {
                    v[i] = switch (dtype) {
                        case "int8" -> buf.get();
                        case "uint8" -> buf.get() & 0xff;
                        case "int16" -> buf.getShort();
                        case "uint16" -> buf.getShort() & 0xffff;
                        default -> buf.getInt();
                    };
                }
                yield Int32Tensor.of(v, shape);
            }
            case "int64", "uint32" -> {
                long[] v = new long[count];
                for (int i = 0; i < count; i++) {
                    v[i] = dtype.equals("uint32") ? buf.getInt() & 0xffffffffL : buf.getLong();
                }
                yield Int64Tensor.of(v, shape);
            }
            default -> {
                float[] v = new float[count];
                for (int i = 0; i < count; i++) {
                    v[i] = switch (dtype) {
                        case "float16" -> Float.float16ToFloat(buf.getShort());
                        case "float64" -> (float) buf.getDouble();
                        default -> buf.getFloat();
                    };
                }
                yield Float32Tensor.of(v, shape);
            }
        };
    }

    static Map<String, Interaction> interactions(String workflow, JsonNode list) {
        if (!list.isArray() || list.isEmpty()) {
            throw new WorkflowContractException(workflow + ".arun_episode returned no interactions");
        }
        Map<String, Interaction> byId = new LinkedHashMap<>();
        for (JsonNode i : list) {
            String id = i.path("id").asText();
            try {
                ModelResponse r = ModelResponse.of(
                        ints(i.path("input_tokens")),
                        ints(i.path("output_tokens")),
                        floats(i.path("output_logprobs")),
                        ints(i.path("output_versions")),
                        StopReason.STOP,
                        Duration.ZERO);
                Interaction.Builder b = Interaction.builder(id).modelResponse(r);
                JsonNode reward = i.path("reward");
                if (reward.isNumber()) {
                    b.reward(reward.asDouble());
                }
                String parent = i.path("parent").isTextual() ? i.path("parent").asText() : null;
                if (parent != null) {
                    Interaction p = byId.get(parent);
                    if (p == null) {
                        throw new IllegalArgumentException("its parent '" + parent + "' is not an earlier interaction");
                    }
                    b.parent(p);
                }
                if ("concat".equalsIgnoreCase(i.path("chat_template_type").asText())) {
                    b.chatTemplateType(Interaction.ChatTemplateType.CONCAT);
                }
                byId.put(id, b.build());
            } catch (IllegalArgumentException | IllegalStateException ex) {
                throw new WorkflowContractException(
                        workflow + ".arun_episode returned interaction '" + id + "': " + ex.getMessage(), ex);
            }
        }
        return byId;
    }

    static int[] ints(JsonNode a) {
        int[] v = new int[a.size()];
        for (int k = 0; k < v.length; k++) {
            v[k] = a.get(k).asInt();
        }
        return v;
    }

    static float[] floats(JsonNode a) {
        float[] v = new float[a.size()];
        for (int k = 0; k < v.length; k++) {
            v[k] = (float) a.get(k).asDouble();
        }
        return v;
    }
}
