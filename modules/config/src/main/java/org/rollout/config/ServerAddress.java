package org.rollout.config;

import java.net.URI;
import java.util.Objects;
import org.rollout.api.InvalidConfigException;

/**
 * An inference server's {@code host:port}, as AReaL spells its server addresses. IPv6 hosts are
 * written in brackets ({@code [::1]:30000}) and kept bracketed in URLs (semantics §9: base URL
 * {@code http://{host:port}}).
 *
 * <p>Immutable; {@link #toString()} gives back the {@code host:port} form used in every error
 * message and in {@code ServerStats}.
 */
public record ServerAddress(String host, int port) {

    public ServerAddress {
        Objects.requireNonNull(host, "host");
        if (host.isBlank() || host.contains("/") || host.contains(" ")) {
            throw new InvalidConfigException("addresses", host + ":" + port, "host:port with a plain host name or IP");
        }
        if (port < 1 || port > 65535) {
            throw new InvalidConfigException("addresses", host + ":" + port, "host:port with a port in 1..65535");
        }
    }

    /**
     * Parses {@code host:port} or {@code [ipv6]:port}.
     *
     * @throws InvalidConfigException (key {@code addresses}) naming the text when it is not of that form
     */
    public static ServerAddress parse(String text) {
        Objects.requireNonNull(text, "address");
        String s = text.strip();
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new InvalidConfigException("addresses", text, "host:port, e.g. 127.0.0.1:30000 or [::1]:30000");
        }
        String host = s.substring(0, colon);
        if (host.startsWith("[") != host.endsWith("]")) {
            throw new InvalidConfigException("addresses", text, "host:port with an IPv6 host in brackets");
        }
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new InvalidConfigException("addresses", text, "host:port with an IPv6 host in brackets");
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new InvalidConfigException("addresses", text, "host:port with a numeric port");
        }
        return new ServerAddress(host, port);
    }

    /** The URI of {@code path} (which starts with {@code /}) on this server. */
    public URI uri(String path) {
        return URI.create("http://" + hostForUrl() + ":" + port + path);
    }

    private String hostForUrl() {
        return host.contains(":") ? "[" + host + "]" : host;
    }

    /** {@code host:port}, with an IPv6 host in brackets. */
    @Override
    public String toString() {
        return hostForUrl() + ":" + port;
    }
}
