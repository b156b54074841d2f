package org.rollout.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;

/**
 * The inference server list's endpoints: {@code GET /v1/servers}, {@code POST /v1/servers} (add one)
 * and {@code DELETE /v1/servers/{host:port}} (drain one); 404 when the gateway has no server list.
 */
final class ServerEndpoints {
    /** How long a drained server may finish its segments before it hands them over, unless the request says. */
    static final Duration DEFAULT_HAND_OVER_AFTER = Duration.ofSeconds(60);

    private static final ObjectMapper JSON = new ObjectMapper();

    private final ServerDirectory servers;

    /** @param servers the server list, or null when the gateway has none */
    ServerEndpoints(ServerDirectory servers) {
        this.servers = servers;
    }

    /** {@code /v1/servers}: GET lists the servers, POST adds one (405 for other methods). */
    void listOrAdd(Request req, Exchange ex, byte[] body) throws Refusal, IOException {
        ServerDirectory directory = directory();
        if (req.method().equals("GET")) {
            listServers(ex, directory);
        } else {
            GatewayHttp.expect(req, "POST", "GET, POST");
            addServer(ex, directory, body);
        }
    }

    /** {@code DELETE /v1/servers/{rawAddress}[?hand_over_after=S]}. */
    void drain(Request req, Exchange ex, String rawAddress) throws Refusal, IOException {
        drainServer(req, ex, directory(), rawAddress);
    }

    private ServerDirectory directory() throws Refusal {
        if (servers == null) {
            throw new Refusal(404, "not_found", "this gateway has no inference server list (/v1/servers)");
        }
        return servers;
    }

    private static void listServers(Exchange ex, ServerDirectory directory) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode list = root.putArray("servers");
        for (ServerDirectory.Entry e : directory.list()) {
            ObjectNode o = list.addObject();
            o.put("address", e.address());
            o.put("state", e.state());
            if (e.version() == null) {
                o.putNull("version");
            } else {
                o.put("version", e.version());
            }
            o.put("in_rotation", e.inRotation());
            o.put("outstanding", e.outstanding());
            o.put("requests", e.requests());
            if (e.lastError() == null) {
                o.putNull("last_error");
            } else {
                o.put("last_error", e.lastError());
            }
        }
        GatewayHttp.json(ex, 200, JSON.writeValueAsBytes(root));
    }

    private static void addServer(Exchange ex, ServerDirectory directory, byte[] body) throws Refusal, IOException {
        JsonNode request;
        try {
            request = JSON.readTree(body);
        } catch (IOException e) {
            throw new Refusal(400, "bad_request", "add server request: the body is not JSON (" + e.getMessage() + ")");
        }
        if (request == null || !request.isObject()) {
            throw new Refusal(400, "bad_request", "add server request: the body must be {\"address\": \"host:port\"}");
        }
        List<String> unknown = new ArrayList<>();
        request.fieldNames().forEachRemaining(f -> {
            if (!f.equals("address")) {
                unknown.add(f);
            }
        });
        if (!unknown.isEmpty()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "add server request: unknown field(s) " + unknown + " (the only field is 'address')");
        }
        JsonNode address = request.get("address");
        if (address == null || !address.isTextual() || address.asText().isBlank()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "add server request: field 'address' must be a string \"host:port\", got " + address);
        }
        boolean added;
        try {
            added = directory.add(address.asText());
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "add server request: field 'address': " + e.getMessage());
        } catch (ServerDirectory.NotReplicatedException e) {
            throw notReplicated(e);
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("address", address.asText().strip());
        answer.put("added", added);
        GatewayHttp.json(ex, added ? 201 : 200, JSON.writeValueAsBytes(answer));
    }

    private static void drainServer(Request req, Exchange ex, ServerDirectory directory, String rawAddress)
            throws Refusal, IOException {
        String address = URLDecoder.decode(rawAddress, StandardCharsets.UTF_8);
        Duration handOverAfter = DEFAULT_HAND_OVER_AFTER;
        String query = req.query();
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&")) {
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                if (!name.equals("hand_over_after")) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "drain server request: unknown query parameter '" + name
                                    + "' (the only one is 'hand_over_after', in seconds)");
                }
                try {
                    double seconds = Double.parseDouble(value);
                    if (!(seconds >= 0) || Double.isInfinite(seconds)) {
                        throw new NumberFormatException();
                    }
                    handOverAfter = Duration.ofMillis(Math.round(seconds * 1000));
                } catch (NumberFormatException e) {
                    throw new Refusal(
                            400,
                            "bad_request",
                            "drain server request: query parameter 'hand_over_after' must be seconds >= 0, got '"
                                    + value + "'");
                }
            }
        }
        boolean draining;
        try {
            draining = directory.drain(address, handOverAfter);
        } catch (NoSuchElementException e) {
            throw new Refusal(404, "unknown_server", e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new Refusal(400, "bad_request", "drain server request: address '" + address + "': " + e.getMessage());
        } catch (ServerDirectory.NotReplicatedException e) {
            throw notReplicated(e);
        } catch (IllegalStateException e) {
            throw new Refusal(409, "last_server", e.getMessage());
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("address", address);
        answer.put("draining", true);
        answer.put("hand_over_after_seconds", handOverAfter.toMillis() / 1000.0);
        GatewayHttp.json(ex, draining ? 202 : 200, JSON.writeValueAsBytes(answer));
    }

    private static Refusal notReplicated(ServerDirectory.NotReplicatedException e) {
        return new Refusal(
                503,
                "not_replicated",
                e.getMessage() + "; it holds on this node only and is lost if this node is downed: repeat it"
                        + " through another node's gateway");
    }
}
