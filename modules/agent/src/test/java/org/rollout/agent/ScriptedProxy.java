package org.rollout.agent;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.api.Tokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * A proxy over a scripted engine for one test, closed after it: {@code @RegisterExtension final
 * ScriptedProxy proxy = new ScriptedProxy(tokenizer, maxNewTokens);} then {@code proxy.session(engine)}.
 */
final class ScriptedProxy implements AfterEachCallback {
    private final Tokenizer tokenizer;
    private final int maxNewTokens;
    private OpenAIProxy proxy;

    ScriptedProxy(Tokenizer tokenizer, int maxNewTokens) {
        this.tokenizer = tokenizer;
        this.maxNewTokens = maxNewTokens;
    }

    /** Starts the proxy over {@code engine} and opens one session (HF chat template). */
    ProxySession session(ScriptedEngine engine) throws Exception {
        return session(engine, tokenizer);
    }

    /** As {@link #session(ScriptedEngine)}, with {@code tokenizer} instead of this fixture's. */
    ProxySession session(ScriptedEngine engine, Tokenizer tokenizer) throws Exception {
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                tokenizer,
                GenerationConfig.builder()
                        .maxTokens(2048)
                        .maxNewTokens(maxNewTokens)
                        .build());
        return openSession("1:0");
    }

    /** Another session {@code key} of the proxy started by {@link #session}. */
    ProxySession openSession(String key) {
        return proxy.openSession(key, Interaction.ChatTemplateType.HF);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (proxy != null) {
            proxy.close();
        }
    }
}
