package org.rollout.inference;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.rollout.api.GenerationConfig;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;

/**
 * Builds and parses the bodies one backend's servers speak (docs/protocol.md, semantics §9.1 and §9.2). One
 * stateless, thread-safe instance per backend: {@link SglangProtocol#INSTANCE} and
 * {@link VllmProtocol#INSTANCE}.
 *
 * <pre>
 *   engine ──generateBody──► POST {@link #generatePath()} ──► server
 *   engine ◄─parseGenerate── 2xx body                    ◄──
 *   WeightUpdater: [{@link #pauseCalls()}] → {@link #updateWeightsCall} → {@link #continueCall()} (always)
 *                  (the pause only where {@link #updateHoldsGeneration()} is false or a grace period is set)
 * </pre>
 *
 * <p>Parsing is strict: anything but a valid response (a duplicate key or content after the JSON
 * object included) is a {@link MalformedResponseException} naming the server, the rid and the
 * field; a response is never half-accepted. Fuzzed (ResponseParserFuzzTest).
 */
public sealed interface ServerProtocol permits SglangProtocol, VllmProtocol {
    /** Builds the bodies of the NCCL control calls. */
    ObjectMapper NCCL_JSON = new ObjectMapper();

    /** The request builder and response parser for {@code backend}. */
    static ServerProtocol of(Backend backend) {
        return switch (backend) {
            case SGLANG -> SglangProtocol.INSTANCE;
            case VLLM -> VllmProtocol.INSTANCE;
        };
    }

    /**
     * The protocol of {@code config}'s backend; for vLLM, with the control routes of its {@code
     * vllm_api} (AReaL's extension or upstream vLLM's own).
     */
    static ServerProtocol of(InferenceConfig config) {
        if (config.backend() == Backend.VLLM && InferenceConfig.VLLM_API_UPSTREAM.equals(config.vllmApi())) {
            return VllmProtocol.UPSTREAM;
        }
        return of(config.backend());
    }

    /** The backend whose protocol this is. */
    Backend backend();

    /** The generate endpoint: {@code /generate} (SGLang) or {@code /v1/completions} (vLLM). */
    String generatePath();

    /**
     * Rejects sampling parameters this backend cannot honour, before anything is sent.
     *
     * @throws IllegalArgumentException naming the parameter (SGLang: {@code use_beam_search})
     */
    void checkSupported(GenerationConfig gconfig);

    /**
     * The JSON body of one segment: the prompt is {@code prompt} followed by the first
     * {@code generatedCount} entries of {@code generated} (the tokens of earlier segments), and the
     * budget is {@code maxNewTokens}. Neither array is modified or retained.
     */
    default byte[] generateBody(
            String rid, int[] prompt, int[] generated, int generatedCount, GenerationConfig gconfig, int maxNewTokens) {
        return generateBody(rid, prompt, generated, generatedCount, gconfig, maxNewTokens, null);
    }

    /**
     * As the other {@code generateBody}, naming the LoRA adapter {@code lora} (SGLang {@code
     * lora_path}, vLLM {@code model}) when it is not null.
     */
    byte[] generateBody(
            String rid,
            int[] prompt,
            int[] generated,
            int generatedCount,
            GenerationConfig gconfig,
            int maxNewTokens,
            String lora);

    /** The call that loads the LoRA adapter file {@code path} as {@code name} (SGLang: {@code /load_lora_adapter}). */
    default ControlCall loadLoraCall(String name, Path path) {
        return ControlCall.post(
                backend() == Backend.VLLM ? "/v1/load_lora_adapter" : "/load_lora_adapter",
                WireJson.object("lora_name", name, "lora_path", path.toString()));
    }

    /** The call that unloads the LoRA adapter {@code name}. */
    default ControlCall unloadLoraCall(String name) {
        return ControlCall.post(
                backend() == Backend.VLLM ? "/v1/unload_lora_adapter" : "/unload_lora_adapter",
                WireJson.object("lora_name", name));
    }

    /**
     * Parses a 2xx generate response.
     *
     * @param maxNewTokens the budget the request asked for; more tokens than this is malformed
     * @throws MalformedResponseException naming {@code server}, {@code rid} and the field
     */
    GeneratedSegment parseGenerate(byte[] body, ServerAddress server, String rid, int maxNewTokens);

    /** The pause calls of a weight update, in order (SGLang: abort mode then in place). */
    List<ControlCall> pauseCalls();

    /**
     * Whether {@link #updateWeightsCall} by itself aborts every request in flight (they return their
     * partial output with {@code abort}) and holds new requests until the new weights are in place,
     * so that no generation can run on a mix of old and new weights without a pause before it. Then
     * a weight update may skip {@link #pauseCalls()} and save a round trip per server.
     */
    boolean updateHoldsGeneration();

    /** The resume call; always sent after a pause, also when the update failed. */
    ControlCall continueCall();

    /** The call that aborts one request, or empty when cancelling means closing the connection (vLLM). */
    Optional<ControlCall> abortCall(String rid);

    /** The call that loads the weights at {@code modelPath} as weight version {@code version}. */
    ControlCall updateWeightsCall(Path modelPath, int version);

    /**
     * The call that sends the bytes of the weight file {@code file} to the server, which loads them
     * as weight version {@code version} ({@code rollout.weight_transfer = http}): {@code POST
     * /update_weights_from_bytes?weight_version=N[&abort_all_requests=true]}, the built-in model
     * server's route (docs/protocol.md, "Weights without a shared disk"); with SGLang the load
     * aborts the requests in flight as {@link #updateWeightsCall} does.
     */
    default ControlCall uploadWeightsCall(Path file, int version) {
        return ControlCall.postFile(
                "/update_weights_from_bytes?weight_version=" + version
                        + (updateHoldsGeneration() ? "&abort_all_requests=true" : ""),
                file);
    }

    /**
     * {@code weight_transfer = nccl}: the call that makes a server join the weight-update group as
     * ranks {@code rankOffset ..} of {@code worldSize} (rank 0 is the trainer), AReaL's payload
     * (master_port as a string, as AReaL sends it): SGLang {@code POST /init_weights_update_group},
     * vLLM {@code POST /areal_init_weights_update_group} (AReaL's extension).
     */
    default ControlCall initWeightsUpdateGroupCall(
            String masterAddress, int masterPort, int rankOffset, int worldSize, String groupName) {
        ObjectNode o = NCCL_JSON.createObjectNode();
        o.put("master_address", masterAddress);
        o.put("master_port", Integer.toString(masterPort));
        o.put("rank_offset", rankOffset);
        o.put("world_size", worldSize);
        o.put("backend", "nccl");
        o.put("group_name", groupName);
        return ControlCall.post(
                backend() == Backend.VLLM ? "/areal_init_weights_update_group" : "/init_weights_update_group",
                o.toString());
    }

    /**
     * {@code weight_transfer = nccl}: the calls of one update whose tensors the trainer broadcasts
     * over group {@code groupName}, in order. SGLang: {@code POST /update_weights_from_distributed
     * {"names", "dtypes", "shapes", "group_name", "flush_cache": true, "abort_all_requests": true,
     * "weight_version": "N"}}; vLLM (AReaL's extension): {@code POST /areal_set_update_weight_meta
     * {"names", "dtypes", "shapes", "group_name"}} then {@code POST /areal_update_weights_xccl {}}.
     */
    default List<ControlCall> distributedUpdateCalls(TensorManifest tensors, String groupName, int version) {
        ObjectNode o = NCCL_JSON.createObjectNode();
        tensors.putParallelArrays(o);
        o.put("group_name", groupName);
        if (backend() == Backend.VLLM) {
            return List.of(
                    ControlCall.post("/areal_set_update_weight_meta", o.toString()),
                    ControlCall.post("/areal_update_weights_xccl", "{}"));
        }
        o.put("flush_cache", true);
        o.put("abort_all_requests", true);
        o.put("weight_version", Integer.toString(version));
        return List.of(ControlCall.post("/update_weights_from_distributed", o.toString()));
    }

    /** {@code GET /health}: 200 when the server is serving. */
    default ControlCall healthCall() {
        return ControlCall.get("/health");
    }
}
