package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.core.ByteLevelTokenizer;
import org.rollout.testengine.ScriptedEngine;

/**
 * The agents' OpenAI-compatible proxy (OpenAIProxy) binds 127.0.0.1 unless configured (nothing off the machine can reach it), and binds the
 * address it is given. Checked on the bound socket and by connecting: a server bound to one
 * loopback address refuses connections on another (127.0.0.2), which a wildcard bind would accept.
 */
class ProxyBindAddressTest {
    @Test
    void bindsTheLoopbackAddressByDefault() throws Exception {
        try (OpenAIProxy server = OpenAIProxy.start(
                ProxyConfig.defaults(),
                ScriptedEngine.scripted(),
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().build())) {
            listensOnlyOn(server.address(), "127.0.0.1");
        }
    }

    @Test
    void bindsAConfiguredAddress() throws Exception {
        try (OpenAIProxy server = OpenAIProxy.start(
                ProxyConfig.defaults().withHost("127.0.0.2"),
                ScriptedEngine.scripted(),
                ByteLevelTokenizer.INSTANCE,
                GenerationConfig.builder().build())) {
            listensOnlyOn(server.address(), "127.0.0.2");
        }
    }

    /** Bound to {@code host}: connections to it succeed, connections to another loopback address are refused. */
    static void listensOnlyOn(InetSocketAddress bound, String host) throws Exception {
        assertThat(bound.getAddress().getHostAddress()).isEqualTo(host);
        int port = bound.getPort();
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 10_000);
            assertThat(s.isConnected()).isTrue();
        }
        String other = host.equals("127.0.0.1") ? "127.0.0.2" : "127.0.0.1";
        assertThatThrownBy(() -> {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress(other, port), 10_000);
                    }
                })
                .isInstanceOf(ConnectException.class);
    }
}
