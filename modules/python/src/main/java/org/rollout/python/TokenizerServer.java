package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.Tokenizer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the engine's {@link Tokenizer} to Python workers on a Unix domain socket, so the
 * tokenizer a Python workflow is given ({@code EngineTokenizer}) gives exactly the engine's ids.
 * One request line, one reply line (docs/protocol.md, "Python workflow workers"):
 *
 * <pre>
 *   {"op":"info"}                                     {"eos_token_id", "pad_token_id", "vocab_size", "name"}
 *   {"op":"encode","text"}                            {"ids":[…]}
 *   {"op":"decode","ids","skip_special_tokens"}       {"text"}
 *   {"op":"chat","messages","add_generation_prompt","variables"}   {"text"}
 *   anything that fails                               {"error": "…"}
 * </pre>
 *
 * <p>Each connection is served by a virtual thread of its own; the socket lives in a private
 * temporary directory removed on {@link #close()}. Thread-safe.
 */
final class TokenizerServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TokenizerServer.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Tokenizer tokenizer;
    private final Path dir;
    private final Path socket;
    private final ServerSocketChannel server;
    private final List<SocketChannel> connections = new ArrayList<>();
    private volatile boolean closed;

    TokenizerServer(Tokenizer tokenizer) throws IOException {
        this.tokenizer = tokenizer;
        this.dir = Files.createTempDirectory("rollout-tok");
        this.socket = dir.resolve("tokenizer.sock");
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        Thread.ofVirtual().name("tokenizer-server").start(this::accept);
    }

    /** The socket's path, for {@code ROLLOUT_TOKENIZER_SOCKET}. */
    Path socket() {
        return socket;
    }

    private void accept() {
        while (!closed) {
            try {
                SocketChannel c = server.accept();
                synchronized (connections) {
                    connections.add(c);
                }
                Thread.ofVirtual().name("tokenizer-connection").start(() -> serve(c));
            } catch (IOException e) {
                if (!closed) {
                    log.warn("the tokenizer socket {} stopped accepting: {}", socket, e.toString());
                }
                return;
            }
        }
    }

    private void serve(SocketChannel c) {
        try (c;
                BufferedReader in =
                        new BufferedReader(new InputStreamReader(Channels.newInputStream(c), StandardCharsets.UTF_8));
                OutputStream out = Channels.newOutputStream(c)) {
            String line;
            while ((line = in.readLine()) != null) {
                byte[] reply = JSON.writeValueAsBytes(answer(line));
                out.write(reply);
                out.write('\n');
                out.flush();
            }
        } catch (IOException e) {
            if (!closed) {
                log.debug("a tokenizer connection ended: {}", e.toString());
            }
        } finally {
            synchronized (connections) {
                connections.remove(c);
            }
        }
    }

    /** The reply to one request line. */
    ObjectNode answer(String line) {
        ObjectNode reply = JSON.createObjectNode();
        try {
            JsonNode req = JSON.readTree(line);
            switch (req.path("op").asText()) {
                case "info" -> {
                    reply.put("eos_token_id", tokenizer.eosTokenId());
                    if (tokenizer.padTokenId() < 0) {
                        reply.putNull("pad_token_id");
                    } else {
                        reply.put("pad_token_id", tokenizer.padTokenId());
                    }
                    reply.put("vocab_size", tokenizer.vocabSize());
                    reply.put("name", tokenizer.toString());
                }
                case "encode" -> {
                    var ids = reply.putArray("ids");
                    for (int id : tokenizer.encode(req.path("text").asText())) {
                        ids.add(id);
                    }
                }
                case "decode" ->
                    reply.put(
                            "text",
                            tokenizer.decode(
                                    WireResults.ints(req.path("ids")),
                                    req.path("skip_special_tokens").asBoolean(false)));
                case "chat" -> {
                    List<Map<String, Object>> messages = JSON.convertValue(
                            req.path("messages"), JSON.getTypeFactory().constructCollectionType(List.class, Map.class));
                    Map<String, Object> variables = req.path("variables").isObject()
                            ? JSON.convertValue(req.path("variables"), Map.class)
                            : Map.of();
                    reply.put(
                            "text",
                            tokenizer.applyChatTemplate(
                                    messages, req.path("add_generation_prompt").asBoolean(false), variables));
                }
                default ->
                    reply.put("error", "unknown tokenizer op '" + req.path("op").asText() + "'");
            }
        } catch (IOException | RuntimeException e) {
            reply.removeAll();
            reply.put("error", e.getMessage() == null ? e.toString() : e.getMessage());
        }
        return reply;
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            log.debug("closing the tokenizer socket: {}", e.toString());
        }
        synchronized (connections) {
            for (SocketChannel c : connections) {
                try {
                    c.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
            }
        }
        try {
            Files.deleteIfExists(socket);
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            log.debug("removing {}: {}", dir, e.toString());
        }
    }
}
