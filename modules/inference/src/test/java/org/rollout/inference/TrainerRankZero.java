package org.rollout.inference;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A test-side trainer rank 0 of the built-in model server's TCP stand-in for an NCCL group
 * (docs/model-server.md, "Weight-update group"): accepts members' joins ({@code ROLLOUT-WEIGHT-GROUP
 * <group> <rank> <world_size>}), answers {@code OK}, and broadcasts tensors as 8-byte big-endian
 * lengths followed by the bytes.
 */
final class TrainerRankZero implements AutoCloseable {
    /** One member's join, as it announced itself. */
    record Join(String group, int rank, int worldSize) {}

    private record Member(Join join, Socket socket) {}

    private final ServerSocket server;
    private final List<Member> members = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    TrainerRankZero() throws IOException {
        server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        acceptor = Thread.ofVirtual().name("rank0-accept").start(this::acceptLoop);
    }

    int port() {
        return server.getLocalPort();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                s.setSoTimeout(30_000);
                String line = readLine(s.getInputStream());
                String[] parts = line.split(" ");
                if (parts.length != 4 || !parts[0].equals("ROLLOUT-WEIGHT-GROUP")) {
                    s.getOutputStream().write(("ERR bad join line '" + line + "'\n").getBytes(StandardCharsets.UTF_8));
                    s.close();
                    continue;
                }
                s.getOutputStream().write("OK\n".getBytes(StandardCharsets.UTF_8));
                members.add(new Member(new Join(parts[1], Integer.parseInt(parts[2]), Integer.parseInt(parts[3])), s));
            } catch (IOException e) {
                // closed, or a member that went away mid-join
            }
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new IOException("member closed before its join line");
            }
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    /** The joins so far, in order. */
    List<Join> joins() {
        List<Join> out = new ArrayList<>();
        members.forEach(m -> out.add(m.join()));
        return out;
    }

    /**
     * Waits (up to {@code timeout}) until {@code expectedMembers} have joined, then broadcasts
     * {@code tensors} to every member, in order.
     */
    void broadcast(int expectedMembers, List<byte[]> tensors, Duration timeout) throws IOException {
        TestSupport.await(expectedMembers + " members in the group", timeout, () -> members.size() >= expectedMembers);
        for (Member m : members) {
            OutputStream out = new DataOutputStream(m.socket().getOutputStream());
            for (byte[] t : tensors) {
                ((DataOutputStream) out).writeLong(t.length);
                out.write(t);
            }
            out.flush();
        }
    }

    @Override
    public void close() throws Exception {
        server.close();
        for (Member m : members) {
            m.socket().close();
        }
        acceptor.join(Duration.ofSeconds(10));
    }
}
