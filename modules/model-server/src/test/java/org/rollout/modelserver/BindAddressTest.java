package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/**
 * The model server (ModelServer on Http1Server, what `rollout model-server` and local runs start) binds 127.0.0.1 unless configured (nothing off the machine can reach it), and binds the
 * address it is given. Checked on the bound socket and by connecting: a server bound to one
 * loopback address refuses connections on another (127.0.0.2), which a wildcard bind would accept.
 */
class BindAddressTest {
    @Test
    void bindsTheLoopbackAddressByDefault() throws Exception {
        try (ModelServer server = ModelServer.start(ModelServerConfig.defaults())) {
            listensOnlyOn(server.address(), "127.0.0.1");
        }
    }

    @Test
    void bindsAConfiguredAddress() throws Exception {
        try (ModelServer server = ModelServer.start(ModelServerConfig.defaults().withHost("127.0.0.2"))) {
            listensOnlyOn(server.address(), "127.0.0.2");
        }
    }

    @Test
    void theFaultEndpointServesClientsOnThisHostOnly() throws Exception {
        assertThat(ModelServer.fromThisHost(InetAddress.getByName("127.0.0.1"))).isTrue();
        assertThat(ModelServer.fromThisHost(InetAddress.getByName("::1"))).isTrue();
        // An address of one of this host's interfaces (a server on a bridge's address is reached from it).
        for (NetworkInterface nic : NetworkInterface.networkInterfaces().toList()) {
            for (InetAddress own : nic.inetAddresses().toList()) {
                assertThat(ModelServer.fromThisHost(own)).as(own.toString()).isTrue();
            }
        }
        // Another machine's (TEST-NET-3, never assigned): refused, without contacting it.
        assertThat(ModelServer.fromThisHost(InetAddress.getByName("203.0.113.7")))
                .isFalse();
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
