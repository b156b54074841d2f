package org.rollout.testengine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.core.ByteLevelTokenizer;

class ScriptedEngineTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final GenerationConfig EIGHT = GenerationConfig.defaults().withMaxNewTokens(8);

    @Test
    void aGeneratingEngineAnswersTokensAtTheCurrentVersionCutToMaxNewTokens() throws Exception {
        ScriptedEngine engine = ScriptedEngine.generating(3);
        engine.setVersion(2);
        ModelResponse r = engine.generate(ModelRequest.of(new int[] {1, 2}, EIGHT));
        assertThat(r.outputTokens()).containsExactly('a', 'b', 'c');
        assertThat(r.outputVersions()).containsExactly(2, 2, 2);
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(ScriptedEngine.generating(20)
                        .generate(ModelRequest.of(new int[] {1}, EIGHT))
                        .outputLength())
                .isEqualTo(8);
        assertThat(engine.generations()).isEqualTo(1);
        assertThat(engine.requests()).isEmpty();
        assertThatThrownBy(() -> engine.setVersion(1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aBlockPromptBlocksUntilInterruptedAndIsCounted() throws Exception {
        ScriptedEngine engine = ScriptedEngine.generating(3);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<ModelResponse> f =
                    pool.submit(() -> engine.generate(ModelRequest.of(new int[] {ScriptedEngine.BLOCK}, EIGHT)));
            assertThat(engine.awaitBlocking(1, WAIT)).isTrue();
            f.cancel(true);
            pool.shutdown();
            assertThat(pool.awaitTermination(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .isTrue();
            assertThat(engine.interrupted()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aPausedEngineAnswersAfterResumeAtTheVersionSetMeanwhile() throws Exception {
        ScriptedEngine engine = ScriptedEngine.generating(2);
        engine.pause();
        CompletableFuture<ModelResponse> f = CompletableFuture.supplyAsync(() -> {
            try {
                return engine.generate(ModelRequest.of(new int[] {1}, EIGHT));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(100);
        assertThat(f).isNotDone();
        engine.setVersion(5);
        engine.resume();
        assertThat(f.get(WAIT.toSeconds(), TimeUnit.SECONDS).outputVersions()).containsExactly(5, 5);
    }

    @Test
    void aScriptedEngineAnswersItsStepsInOrderAndRecordsTheRequests() throws Exception {
        ByteLevelTokenizer tok = ByteLevelTokenizer.INSTANCE;
        ScriptedEngine engine = ScriptedEngine.scripted()
                .thenReply("hi")
                .thenReply("far too long a reply")
                .thenOutput(new int[] {'x', 'y'}, 4, StopReason.STOP)
                .thenFail(new IllegalArgumentException("scripted"));
        ModelResponse hi = engine.generate(ModelRequest.of(new int[] {1}, EIGHT));
        assertThat(hi.outputTokens()).endsWith(tok.eosTokenId());
        assertThat(hi.stopReason()).isEqualTo(StopReason.STOP);
        ModelResponse cut = engine.generate(ModelRequest.of(new int[] {2}, EIGHT));
        assertThat(cut.outputLength()).isEqualTo(8);
        assertThat(cut.stopReason()).isEqualTo(StopReason.LENGTH);
        ModelResponse xy = engine.generate(ModelRequest.of(new int[] {3}, EIGHT));
        assertThat(xy.outputTokens()).containsExactly('x', 'y');
        assertThat(xy.outputVersions()).containsExactly(4, 4);
        assertThat(xy.outputLogprobs()).containsExactly(-0.1f, -0.2f);
        assertThatThrownBy(() -> engine.generate(ModelRequest.of(new int[] {4}, EIGHT)))
                .hasMessage("scripted");
        assertThatThrownBy(() -> engine.generate(ModelRequest.of(new int[] {5}, EIGHT)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("nothing scripted");
        assertThat(engine.requests()).extracting(r -> r.inputId(0)).containsExactly(1, 2, 3, 4, 5);
    }
}
