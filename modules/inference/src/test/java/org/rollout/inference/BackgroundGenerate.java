package org.rollout.inference;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;

/** A generate call running on its own virtual thread, as a workflow's would. */
final class BackgroundGenerate {
    final Thread thread;
    final CompletableFuture<ModelResponse> result = new CompletableFuture<>();

    private BackgroundGenerate(InferenceEngine engine, ModelRequest request) {
        thread = Thread.ofVirtual().name("workflow-" + request.rid()).unstarted(() -> {
            try {
                result.complete(engine.generate(request));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
    }

    static BackgroundGenerate start(InferenceEngine engine, ModelRequest request) {
        BackgroundGenerate call = new BackgroundGenerate(engine, request);
        call.thread.start();
        return call;
    }

    /** The response, waiting at most 30 s. */
    ModelResponse get() throws Exception {
        return result.get(30, TimeUnit.SECONDS);
    }

    /** What generate threw, waiting at most {@code seconds}. */
    Throwable failure(int seconds) throws Exception {
        try {
            ModelResponse r = result.get(seconds, TimeUnit.SECONDS);
            throw new AssertionError("generate returned " + r + " instead of failing");
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }
}
