package org.rollout.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.api.AgentEnv;
import org.rollout.api.GenerationConfig;
import org.rollout.api.WorkflowContext;

/**
 * AReaL's agent form ({@code async def run(self, data, **extra_kwargs)}) in a worker pool: the
 * episode's base URL and key reach {@code run} as its extra kwargs, its return value becomes the
 * proxy's reward (a number, rewards by completion id, or null for None), a raise fails the episode
 * naming the class, and cancellation ends it. (PythonWorkflowRunTest runs an agent through the
 * node's real proxy.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PythonAgentTest {
    private PythonAgent agent;

    @BeforeAll
    void start() throws Exception {
        PythonWorkflowPool pool = PythonWorkflowPool.start(
                "jvm_toys:ToyAgent",
                Map.of("scale", 2.0),
                GenerationConfig.defaults(),
                null,
                PythonWorkflowTest.settings(1));
        assertThat(pool.kind()).isEqualTo("agent");
        agent = new PythonAgent(pool);
    }

    @AfterAll
    void stop() {
        if (agent != null) {
            agent.close();
        }
    }

    private Object run(String mode, Map<String, List<Double>> stats) throws Exception {
        return run(Map.of("mode", mode), stats);
    }

    private Object run(Map<String, Object> data, Map<String, List<Double>> stats) throws Exception {
        WorkflowContext ctx = WorkflowContext.builder()
                .taskId(3)
                .sampleIdx(1)
                .groupSize(2)
                .stats((k, v) ->
                        stats.computeIfAbsent(k, x -> new ArrayList<>()).add(v))
                .build();
        AgentEnv env = new AgentEnv() {
            @Override
            public URI baseUrl() {
                return URI.create("http://127.0.0.1:9/s/3:1/v1");
            }

            @Override
            public String apiKey() {
                return "sk-test";
            }

            @Override
            public HttpClient httpClient() {
                return HttpClient.newHttpClient();
            }

            @Override
            public WorkflowContext context() {
                return ctx;
            }
        };
        return WorkflowContext.callWith(ctx, () -> agent.run(data, env));
    }

    @Test
    void runGetsTheSessionAndItsReturnValueIsTheReward() throws Exception {
        Map<String, List<Double>> stats = new ConcurrentHashMap<>();
        // scale 2 × len("http://127.0.0.1:9/s/3:1/v1") + 1000 for the key.
        assertThat(run("reward", stats)).isEqualTo(2.0 * "http://127.0.0.1:9/s/3:1/v1".length() + 1000.0);
        assertThat(run("rewards", stats)).isEqualTo(Map.of("c1", 0.25, "c2", 0.75));
        assertThat(run("none", stats)).isNull();
        assertThat(stats.get("agent_ran")).hasSize(3);
        assertThatThrownBy(() -> run("raise", stats))
                .isInstanceOf(PythonWorkflowException.class)
                .hasMessage("ToyAgent.run: RuntimeError: the tool server is down");
    }

    @Test
    void aCancelledAgentEpisodeEnds() throws Exception {
        AtomicReference<Throwable> ended = new AtomicReference<>();
        java.nio.file.Path started =
                java.nio.file.Files.createTempDirectory("agent").resolve("started");
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                run(Map.of("mode", "sleep", "started", started.toString()), new ConcurrentHashMap<>());
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        PythonWorkflowTest.until(
                "the agent's task running", Duration.ofSeconds(60), () -> java.nio.file.Files.exists(started));
        t.interrupt();
        assertThat(t.join(Duration.ofSeconds(10))).isTrue();
        assertThat(ended.get()).isInstanceOf(InterruptedException.class);
    }
}
