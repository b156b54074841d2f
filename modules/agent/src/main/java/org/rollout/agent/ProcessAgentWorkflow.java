package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InferenceEngine;
import org.rollout.api.RolloutWorkflow;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an agent written in any language as one process per episode, behind the node's {@link
 * OpenAIProxy}: AReaL's subprocess agents, for programs rather than Python objects.
 *
 * <pre>
 *   environment  OPENAI_BASE_URL=http://127.0.0.1:PORT/s/{task_id}:{sample_idx}/v1
 *                OPENAI_API_KEY=sk-rollout-…      ROLLOUT_TASK_ID, ROLLOUT_SAMPLE_IDX (when known)
 *   stdin        the data item as one JSON object, then EOF
 *   stdout       anything; the LAST non-blank line is the reward: 0.5 or {"chatcmpl-…": 1.0, …}
 *   stderr       anything; its last 2 KiB are quoted when the episode is rejected
 * </pre>
 *
 * <p>Outcomes: exit 0 with a reward line → rewards applied and exported as in {@link
 * ProxyAgentWorkflow}; timeout → the process and its descendants are killed and the episode is
 * {@code Rejected("agent process timed out after N s; stderr: …")}; exit code N ≠ 0 → {@code
 * Rejected("agent process exited with N; stderr: …")}; a last line that is not a number or an
 * object of numbers → {@code Rejected} quoting (the start of) that line. Interruption kills the
 * process tree and propagates. The command is run directly (no shell); use {@code ["bash",
 * "agent.sh"]} or {@code ["python3", "agent.py"]}.
 *
 * <p>Thread-safe: each episode starts its own process; the instance holds only configuration.
 */
public final class ProcessAgentWorkflow implements RolloutWorkflow {
    private static final Logger log = LoggerFactory.getLogger(ProcessAgentWorkflow.class);
    /** How much of stderr a rejection quotes. */
    public static final int STDERR_TAIL_BYTES = 2048;

    private static final int STDOUT_TAIL_BYTES = 64 * 1024;
    private static final Duration REAP_TIMEOUT = Duration.ofSeconds(10);

    private final List<String> command;
    private final Path workingDir;
    private final Duration timeout;
    private final ProxyAgentWorkflow episode;

    /**
     * @param proxy the node's proxy
     * @param options export style and turn discount (the mode is not used)
     * @param command the program and its arguments, run without a shell
     * @param workingDir the process's working directory, or null for the JVM's
     * @param timeout how long one episode's process may run; positive
     */
    public ProcessAgentWorkflow(
            OpenAIProxy proxy, AgentOptions options, List<String> command, Path workingDir, Duration timeout) {
        this.command = List.copyOf(Objects.requireNonNull(command, "command"));
        if (this.command.isEmpty() || this.command.getFirst().isBlank()) {
            throw new IllegalArgumentException("agent process command must name a program, got " + command);
        }
        this.workingDir = workingDir;
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("agent process timeout must be positive, got " + timeout);
        }
        this.episode = new ProxyAgentWorkflow(proxy, options, new ProcessAgent());
    }

    public List<String> command() {
        return command;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        return episode.runEpisode(engine, data);
    }

    /** One process per call of {@link #run}. */
    private final class ProcessAgent implements AgentWorkflow {
        @Override
        public Object run(Map<String, Object> data, AgentEnv env) throws Exception {
            ProcessBuilder pb = new ProcessBuilder(command);
            if (workingDir != null) {
                pb.directory(workingDir.toFile());
            }
            Map<String, String> environment = pb.environment();
            environment.put("OPENAI_BASE_URL", env.baseUrl().toString());
            environment.put("OPENAI_API_KEY", env.apiKey());
            env.context().taskId().ifPresent(t -> environment.put("ROLLOUT_TASK_ID", Long.toString(t)));
            env.context().sampleIdx().ifPresent(s -> environment.put("ROLLOUT_SAMPLE_IDX", Integer.toString(s)));
            byte[] input = ProxyRequests.JSON.writeValueAsBytes(data);
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                throw new EpisodeRejectedException("agent process " + command + " could not start: " + e.getMessage());
            }
            Tail stdout = new Tail(STDOUT_TAIL_BYTES);
            Tail stderr = new Tail(STDERR_TAIL_BYTES);
            Thread out = Thread.ofVirtual().start(() -> stdout.drain(p.getInputStream()));
            Thread err = Thread.ofVirtual().start(() -> stderr.drain(p.getErrorStream()));
            Thread in = Thread.ofVirtual().start(() -> feed(p.getOutputStream(), input));
            boolean exited;
            try {
                exited = p.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                killTree(p);
                throw e;
            }
            if (!exited) {
                killTree(p);
                join(out, err, in);
                throw new EpisodeRejectedException(
                        "agent process timed out after " + seconds(timeout) + " s; stderr: " + stderr.text());
            }
            join(out, err, in);
            int code = p.exitValue();
            if (code != 0) {
                throw new EpisodeRejectedException("agent process exited with " + code + "; stderr: " + stderr.text());
            }
            return reward(stdout.text(), stderr.text());
        }
    }

    /** The last non-blank stdout line as a reward value. */
    static Object reward(String stdout, String stderrTail) throws EpisodeRejectedException {
        String[] lines = stdout.split("\\R");
        String last = null;
        for (int i = lines.length - 1; i >= 0; i--) {
            if (!lines[i].isBlank()) {
                last = lines[i].strip();
                break;
            }
        }
        if (last == null) {
            throw new EpisodeRejectedException("agent process printed no reward on stdout (expected a number or"
                    + " {\"completion_id\": number} on the last line); stderr: " + stderrTail);
        }
        JsonNode node;
        try {
            node = ProxyRequests.JSON.readTree(last);
        } catch (JsonProcessingException e) {
            node = null;
        }
        if (node != null && node.isNumber()) {
            return node.asDouble();
        }
        if (node != null && node.isObject()) {
            Map<String, Object> byId = new LinkedHashMap<>();
            boolean numeric = true;
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                numeric &= e.getValue().isNumber();
                byId.put(e.getKey(), e.getValue().asDouble());
            }
            if (numeric) {
                return byId;
            }
        }
        String quoted = last.length() > 200 ? last.substring(0, 200) + "…" : last;
        throw new EpisodeRejectedException("agent process's last stdout line is not a reward (a number or"
                + " {\"completion_id\": number}): '" + quoted + "'");
    }

    private static void feed(OutputStream stdin, byte[] input) {
        try (stdin) {
            stdin.write(input);
            stdin.write('\n');
        } catch (IOException e) {
            // The agent need not read its input; a closed pipe is its choice, not an error.
            log.debug("agent process did not read its stdin: {}", e.toString());
        }
    }

    private static void killTree(Process p) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        try {
            if (!p.waitFor(REAP_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS)) {
                log.warn("agent process {} still running {} s after being killed", p.pid(), seconds(REAP_TIMEOUT));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits (bounded) for the pipe threads; a grandchild holding a pipe open must not hang the episode. */
    private static void join(Thread... threads) throws InterruptedException {
        long deadline = System.nanoTime() + REAP_TIMEOUT.toNanos();
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                log.warn("an agent process pipe is still open after the process ended; its output is cut");
                t.interrupt();
            }
        }
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? Long.toString(d.toSeconds()) : String.valueOf(d.toMillis() / 1000.0);
    }

    /** The last {@code capacity} bytes written to it; thread-safe. */
    static final class Tail {
        private final int capacity;
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private boolean cut;

        Tail(int capacity) {
            this.capacity = capacity;
        }

        void drain(InputStream in) {
            byte[] buf = new byte[8192];
            try (in) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    append(buf, n);
                }
            } catch (IOException e) {
                log.debug("agent process pipe closed: {}", e.toString());
            }
        }

        synchronized void append(byte[] buf, int n) {
            bytes.write(buf, 0, n);
            if (bytes.size() > 2 * capacity) {
                byte[] all = bytes.toByteArray();
                bytes.reset();
                bytes.write(all, all.length - capacity, capacity);
                cut = true;
            }
        }

        synchronized String text() {
            byte[] all = bytes.toByteArray();
            int from = Math.max(0, all.length - capacity);
            String s = new String(all, from, all.length - from, StandardCharsets.UTF_8);
            return (cut || from > 0 ? "…" : "") + s;
        }
    }

    @Override
    public String toString() {
        List<String> shown = new ArrayList<>(command);
        return "ProcessAgentWorkflow{" + shown + ", timeout=" + seconds(timeout) + " s}";
    }
}
