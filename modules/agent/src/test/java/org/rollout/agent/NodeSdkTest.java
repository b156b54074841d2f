package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.Interaction;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * The official Node SDKs ({@code openai}'s Responses client, {@code @anthropic-ai/sdk}'s Messages
 * client) drive the proxy, plain and streaming, with tool round trips, through {@code
 * src/test/node/sdk-check.mjs}; agent frameworks' SDKs (the Vercel AI SDK, LangChain's ChatOpenAI,
 * the OpenAI Agents SDK) through {@code src/test/node/frameworks-check.mjs}; each on a scripted engine
 * and on the built-in model. Skipped when {@code node} or the scripts' installed {@code node_modules}
 * ({@code npm ci} in src/test/node) are missing.
 */
class NodeSdkTest {
    private static final Path SCRIPT_DIR = Path.of("src", "test", "node");
    private static final String CALL =
            "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>";
    /** What the model writes after the opening of a forced call to the named function add. */
    private static final String AFTER_NAME = "{\"a\": 2, \"b\": 3}}\n</tool_call>";
    /** What the model writes after the opening of a forced call to any function. */
    private static final String AFTER_OPEN = "{\"name\": \"add\", \"arguments\": " + AFTER_NAME;

    private OpenAIProxy proxy;

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    @Test
    void theOfficialNodeSdksTalkResponsesAndMessagesIncludingToolRoundTrips(@TempDir Path tmp) throws Exception {
        assumeNodeAndModules();
        ScriptedEngine engine = ScriptedEngine.replying(
                "Hello there.",
                "Streamed words here.",
                CALL,
                "It is 5.",
                CALL,
                "Bonjour.",
                "Streaming from messages.",
                CALL,
                "It is 5.",
                CALL,
                "<think>\nTwo plus three.\n</think>\n\nIt is 5.",
                "<think>\nTwo plus three.\n</think>\n\nIt is 5.");
        engine.setVersion(3);
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build());
        ProxySession s = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);

        String out = runNode(s, "scripted", tmp);
        assertThat(out.lines().filter(l -> l.startsWith("ok ")).count()).as(out).isEqualTo(12);

        List<Interaction> its = s.interactions();
        assertThat(its).hasSize(12);
        List<String> ids = new ArrayList<>();
        for (Interaction it : its) {
            ids.add(it.id());
            assertThat(it.modelResponse().outputVersions()).containsOnly(3);
        }
        assertThat(ids.subList(0, 5)).allMatch(id -> id.startsWith("resp_"));
        assertThat(ids.subList(5, 10)).allMatch(id -> id.startsWith("msg_"));
        // A streamed answer that thought first: its reasoning item is built up by the SDK as OpenAI's is.
        assertThat(out).contains("ok responses streamed reasoning " + ids.get(10));
        assertThat(out).contains("ok messages streamed thinking " + ids.get(11));
        assertThat(out).contains("ok responses tool round trip " + ids.get(2) + " " + ids.get(3));
        assertThat(out).contains("ok messages tool round trip " + ids.get(7) + " " + ids.get(8));
        // The second turn of each round trip continues the first: its parent is the first's interaction.
        assertThat(its.get(3).parent()).isSameAs(its.get(2));
        assertThat(its.get(8).parent()).isSameAs(its.get(7));
        // Recorded tokens are exactly what the engine generated: the tool call's text and EOS.
        int[] call = ByteLevelTokenizer.INSTANCE.encode(CALL);
        int[] generated = its.get(2).modelResponse().outputTokens();
        assertThat(generated).hasSize(call.length + 1).startsWith(call);
        assertThat(generated[call.length]).isEqualTo(ByteLevelTokenizer.INSTANCE.eosTokenId());
    }

    @Test
    void theBuiltInModelAnswersTheNodeSdksPlainAndStreamedWithEveryTokenRecorded(@TempDir Path tmp) throws Exception {
        assumeNodeAndModules();
        try (BuiltInModel model = BuiltInModel.seeded()) {
            proxy = OpenAIProxy.start(
                    ProxyConfig.defaults(),
                    model.engine,
                    ByteLevelTokenizer.INSTANCE,
                    GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build());
            ProxySession s = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);
            String out = runNode(s, "builtin", tmp);

            List<String> lines = out.lines().filter(l -> l.startsWith("ok ")).toList();
            List<Interaction> its = s.interactions();
            assertThat(lines).as(out).hasSize(4);
            assertThat(its).hasSize(4);
            for (int i = 0; i < 4; i++) {
                Interaction it = its.get(i);
                // "ok <step> <id> <output tokens the API reported>"
                assertThat(lines.get(i))
                        .endsWith(" " + it.id() + " " + it.modelResponse().outputLength());
                assertThat(it.modelResponse().outputVersions()).containsOnly(0);
                assertThat(it.modelResponse().outputLogprobs())
                        .hasSize(it.modelResponse().outputLength());
            }
        }
    }

    @Test
    void agentFrameworksSdksChatOverTwoTurnsForceToolCallsAndRunAnAgentWithATool(@TempDir Path tmp) throws Exception {
        assumeNodeAndModules();
        assumeFrameworkModules();
        ScriptedEngine engine = ScriptedEngine.replying(
                // The AI SDK sends a reasoning item back by reference too.
                "<think>\nGreet them.\n</think>\n\nHello there.",
                "Fine, thanks.",
                AFTER_NAME,
                AFTER_OPEN,
                "Bonjour.",
                AFTER_OPEN,
                "Hello there.",
                "Fine, thanks.",
                AFTER_NAME,
                AFTER_OPEN,
                "It is 5.");
        proxy = OpenAIProxy.start(
                ProxyConfig.defaults(),
                engine,
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build());
        ProxySession s = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);

        String out = runNode(s, "frameworks-check.mjs", "scripted", tmp);

        List<String> ok = out.lines().filter(l -> l.startsWith("ok ")).toList();
        assertThat(ok).as(out).hasSize(8);
        List<Interaction> its = s.interactions();
        assertThat(its).hasSize(11);
        List<String> ids = its.stream().map(Interaction::id).toList();
        // Each SDK's second turn continues its first: the item reference stood for the first answer.
        assertThat(out).contains("ok ai-sdk responses two turns with item references " + ids.get(0) + " " + ids.get(1));
        assertThat(its.get(1).parent()).isSameAs(its.get(0));
        assertThat(its.get(7).parent()).isSameAs(its.get(6));
        assertThat(out).contains("ok agents run with a forced tool " + ids.get(9) + " " + ids.get(10));
        assertThat(its.get(10).parent()).isSameAs(its.get(9));
        // A forced call's opening is prompt, the model's continuation output.
        int[] opening = ByteLevelTokenizer.INSTANCE.encode("<tool_call>\n{\"name\": \"add\", \"arguments\": ");
        int[] prompt = its.get(2).modelResponse().inputTokens();
        assertThat(java.util.Arrays.copyOfRange(prompt, prompt.length - opening.length, prompt.length))
                .containsExactly(opening);
        int[] generated = ByteLevelTokenizer.INSTANCE.encode(AFTER_NAME);
        assertThat(its.get(2).modelResponse().outputTokens())
                .hasSize(generated.length + 1)
                .startsWith(generated);
    }

    @Test
    void theBuiltInModelAnswersTheAgentFrameworksSdksOverTwoTurns(@TempDir Path tmp) throws Exception {
        assumeNodeAndModules();
        assumeFrameworkModules();
        try (BuiltInModel model = BuiltInModel.seeded()) {
            proxy = OpenAIProxy.start(
                    ProxyConfig.defaults(),
                    model.engine,
                    ByteLevelTokenizer.INSTANCE,
                    GenerationConfig.builder().maxTokens(2048).maxNewTokens(128).build());
            ProxySession s = proxy.openSession("1:0", Interaction.ChatTemplateType.HF);

            String out = runNode(s, "frameworks-check.mjs", "builtin", tmp);

            assertThat(out.lines().filter(l -> l.startsWith("ok "))).as(out).hasSize(3);
            List<Interaction> its = s.interactions();
            assertThat(its.size()).as(out).isGreaterThanOrEqualTo(5);
            // LangChain sends the first answer back as it got it: the second turn continues it.
            assertThat(its.get(3).parent()).isSameAs(its.get(2));
            for (Interaction it : its) {
                assertThat(out).contains(it.id());
                assertThat(it.modelResponse().outputLogprobs())
                        .hasSize(it.modelResponse().outputLength());
            }
        }
    }

    private static String runNode(ProxySession s, String scenario, Path tmp) throws Exception {
        return runNode(s, "sdk-check.mjs", scenario, tmp);
    }

    /** Runs {@code script} in {@code scenario} against session {@code s}; its output once it exited 0. */
    private static String runNode(ProxySession s, String script, String scenario, Path tmp) throws Exception {
        Path log = tmp.resolve("node-" + script + "-" + scenario + ".log");
        ProcessBuilder pb = new ProcessBuilder("node", script)
                .directory(SCRIPT_DIR.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile());
        pb.environment().put("ROLLOUT_BASE_URL", s.baseUrl().toString());
        pb.environment().put("ROLLOUT_API_KEY", s.apiKey());
        pb.environment().put("ROLLOUT_SCENARIO", scenario);
        // Nothing but the proxy is contacted: SDKs that read these find the session, tracing is off.
        pb.environment().put("OPENAI_BASE_URL", s.baseUrl().toString());
        pb.environment().put("OPENAI_API_KEY", s.apiKey());
        pb.environment().put("OPENAI_AGENTS_DISABLE_TRACING", "1");
        pb.environment().put("LANGCHAIN_TRACING_V2", "false");
        pb.environment().put("LANGSMITH_TRACING", "false");
        Process p = pb.start();
        boolean exited = p.waitFor(120, TimeUnit.SECONDS);
        if (!exited) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(exited).as("node finished within 120 s; output:%n%s", out).isTrue();
        assertThat(p.exitValue()).as("node's exit code; output:%n%s", out).isZero();
        return out;
    }

    private static void assumeFrameworkModules() {
        for (String m : List.of("ai", "@ai-sdk/openai", "@ai-sdk/anthropic", "@langchain/openai", "@openai/agents")) {
            Assumptions.assumeTrue(
                    Files.isDirectory(SCRIPT_DIR.resolve("node_modules").resolve(m)),
                    m + " is not installed: run 'npm ci' in modules/agent/src/test/node; framework SDK test skipped");
        }
    }

    private void assumeNodeAndModules() throws InterruptedException {
        try {
            Process v = new ProcessBuilder("node", "--version")
                    .redirectErrorStream(true)
                    .start();
            Assumptions.assumeTrue(
                    v.waitFor(30, TimeUnit.SECONDS) && v.exitValue() == 0,
                    "node is not runnable: Node SDK test skipped");
        } catch (IOException e) {
            Assumptions.abort("node is not on the PATH: Node SDK test skipped (" + e.getMessage() + ")");
        }
        Assumptions.assumeTrue(
                Files.isDirectory(SCRIPT_DIR.resolve("node_modules/openai"))
                        && Files.isDirectory(SCRIPT_DIR.resolve("node_modules/@anthropic-ai/sdk")),
                "the Node SDKs are not installed: run 'npm ci' in modules/agent/src/test/node; Node SDK test skipped");
    }
}
