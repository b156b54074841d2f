package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.FakeInferenceServer.after;
import static org.rollout.inference.FakeInferenceServer.sglang;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;
import static org.rollout.inference.TestSupport.fakeLogprobs;
import static org.rollout.inference.TestSupport.range;
import static org.rollout.inference.TestSupport.repeat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.InferenceConfig;
import org.rollout.config.InterruptMode;

/** {@code interrupt_mode}: resuming an aborted segment (the default) against discarding its tokens. */
class InterruptModeTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10};

    private final FakeInferenceServer server = FakeInferenceServer.start();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        server.close();
    }

    private static ModelRequest request(int maxNewTokens) {
        return ModelRequest.of(
                PROMPT, GenerationConfig.builder().maxNewTokens(maxNewTokens).build());
    }

    @Test
    void resumeIsTheDefault() {
        assertThat(config(server.address()).build().interruptMode()).isEqualTo(InterruptMode.RESUME);
    }

    @Test
    void discardDropsTheInterruptedTokensAndRegeneratesFromThePromptWithTheFullBudget() throws Exception {
        engine = engine(
                config(server.address()).interruptMode(InterruptMode.DISCARD).build());
        engine.setVersion(3);
        server.on(
                "/generate", after(() -> engine.setVersion(4), sglang(1000, 40, "abort")), sglang(2000, 100, "length"));
        ModelRequest request = request(100);

        ModelResponse r = engine.generate(request);

        assertThat(r.outputTokens()).containsExactly(range(2000, 100));
        assertThat(r.outputLogprobs()).containsExactly(fakeLogprobs(100));
        assertThat(r.outputVersions())
                .as("only the regenerated tokens, all of version 4")
                .containsExactly(repeat(4, 100));
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        List<FakeInferenceServer.Recorded> sent = server.requests("/generate");
        assertThat(sent).hasSize(2);
        assertThat(sent.get(1).promptIds()).as("the original prompt again").containsExactly(PROMPT);
        assertThat(sent.get(1).maxNewTokens()).as("the whole budget again").isEqualTo(100);
        assertThat(sent.get(1).rid()).isEqualTo(request.rid());
        assertThat(engine.discardedTokens()).isEqualTo(40);
    }

    @Test
    void resumeKeepsTheInterruptedTokensAndDiscardsNothing() throws Exception {
        engine = engine(config(server.address()).build());
        server.on("/generate", sglang(1000, 40, "abort"), sglang(2000, 60, "length"));

        ModelResponse r = engine.generate(request(100));

        assertThat(r.outputLength()).isEqualTo(100);
        assertThat(engine.discardedTokens()).isZero();
    }

    @Test
    void underDiscardAnAbortThatSpentTheWholeBudgetIsKeptAsLength() throws Exception {
        engine = engine(
                config(server.address()).interruptMode(InterruptMode.DISCARD).build());
        server.on("/generate", sglang(1, 10, "abort"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputTokens()).containsExactly(range(1, 10));
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(engine.discardedTokens()).isZero();
        assertThat(server.requests("/generate")).hasSize(1);
    }

    @Test
    void interruptModeIsReadFromItsSnakeCaseKeyAndABadValueIsRefusedNamingIt() {
        InferenceConfig c = InferenceConfig.fromMap(Map.of("addresses", "127.0.0.1:1", "interrupt_mode", "discard"));
        assertThat(c.interruptMode()).isEqualTo(InterruptMode.DISCARD);
        assertThat(c.toBuilder().build().interruptMode()).isEqualTo(InterruptMode.DISCARD);
        assertThat(InferenceConfig.KEYS).contains("interrupt_mode");
        assertThatThrownBy(() -> InferenceConfig.fromMap(Map.of("addresses", "127.0.0.1:1", "interrupt_mode", "drop")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'interrupt_mode'")
                .hasMessageContaining("drop")
                .hasMessageContaining("resume or discard");
    }
}
