package org.rollout.inference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The tensors of one weight update under {@code weight_transfer = nccl}: the names, dtypes and
 * shapes the trainer broadcasts, in broadcast order (AReaL's {@code ParamSpec} list). Published as
 * a small JSON file, {@code {"tensors": [{"name", "dtype", "shape": [..]}, ..]}}, whose path takes
 * the place of the weight file's path (the gateway writes it from the publish request's {@code
 * tensors}; docs/inference.md, "NCCL weight updates").
 */
public record TensorManifest(List<Tensor> tensors) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One tensor: its parameter name, torch dtype name ({@code bfloat16}, {@code float32}, ..) and shape. */
    public record Tensor(String name, String dtype, List<Long> shape) {
        public Tensor {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(dtype, "dtype");
            shape = List.copyOf(shape);
        }
    }

    public TensorManifest {
        tensors = List.copyOf(tensors);
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("a tensor manifest names at least one tensor");
        }
    }

    /**
     * Reads the manifest at {@code file}.
     *
     * @throws IllegalArgumentException naming the file and the field at fault
     */
    public static TensorManifest read(Path file) {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "weight_transfer = nccl: cannot read the tensor manifest " + file + ": " + e.getMessage(), e);
        }
        return parse(root, "tensor manifest " + file);
    }

    /**
     * Parses {@code {"tensors": [..]}} (or the array itself).
     *
     * @throws IllegalArgumentException naming {@code what} and the field at fault
     */
    public static TensorManifest parse(JsonNode root, String what) {
        JsonNode list = root != null && root.isObject() ? root.get("tensors") : root;
        if (list == null || !list.isArray() || list.isEmpty()) {
            throw new IllegalArgumentException(
                    what + ": field 'tensors' must be a non-empty array of {\"name\", \"dtype\", \"shape\"}");
        }
        List<Tensor> tensors = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            JsonNode t = list.get(i);
            String at = what + ": tensors[" + i + "]";
            if (!t.isObject()) {
                throw new IllegalArgumentException(at + " must be an object");
            }
            String name = text(t, "name", at);
            String dtype = text(t, "dtype", at);
            JsonNode shape = t.get("shape");
            if (shape == null || !shape.isArray()) {
                throw new IllegalArgumentException(at + ".shape must be an array of integers >= 0");
            }
            List<Long> dims = new ArrayList<>(shape.size());
            for (JsonNode d : shape) {
                if (!d.isIntegralNumber() || d.asLong() < 0) {
                    throw new IllegalArgumentException(at + ".shape must be an array of integers >= 0, got " + shape);
                }
                dims.add(d.asLong());
            }
            tensors.add(new Tensor(name, dtype, dims));
        }
        return new TensorManifest(tensors);
    }

    private static String text(JsonNode t, String field, String at) {
        JsonNode v = t.get(field);
        if (v == null || !v.isTextual() || v.textValue().isBlank()) {
            throw new IllegalArgumentException(at + "." + field + " must be a non-blank string");
        }
        return v.textValue();
    }

    /** {@code {"tensors": [..]}}. */
    public byte[] toJson() {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode list = root.putArray("tensors");
        for (Tensor t : tensors) {
            ObjectNode o = list.addObject();
            o.put("name", t.name());
            o.put("dtype", t.dtype());
            ArrayNode shape = o.putArray("shape");
            t.shape().forEach(shape::add);
        }
        try {
            return JSON.writeValueAsBytes(root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Adds {@code "names"}, {@code "dtypes"} and {@code "shapes"} (parallel arrays, AReaL's payload) to {@code o}. */
    void putParallelArrays(ObjectNode o) {
        ArrayNode names = o.putArray("names");
        ArrayNode dtypes = o.putArray("dtypes");
        ArrayNode shapes = o.putArray("shapes");
        for (Tensor t : tensors) {
            names.add(t.name());
            dtypes.add(t.dtype());
            ArrayNode shape = shapes.addArray();
            t.shape().forEach(shape::add);
        }
    }
}
