package org.rollout.modelserver;

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
 * Rank 0 of the built-in model server's TCP stand-in for an NCCL weight-update group ({@link
 * WeightGroup}; docs/model-server.md, "Weight-update group"), the trainer's side: accepts members'
 * joins ({@code ROLLOUT-WEIGHT-GROUP <group> <rank> <world_size>}), answers {@code OK}, and
 * broadcasts tensors as 8-byte big-endian lengths followed by the bytes. For tests and demos of the
 * NCCL control plane without GPUs; a real trainer broadcasts with NCCL.
 */
public final class WeightGroupMaster implements AutoCloseable {
    /** One member's join, as it announced itself. */
    public record Join(String group, int rank, int worldSize) {}

    private record Member(Join join, Socket socket) {}

    private final ServerSocket server;
    private final List<Member> members = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    /** Listens on a free port of the loopback address. */
    public WeightGroupMaster() throws IOException {
        server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        acceptor = Thread.ofVirtual().name("weight-group-master-accept").start(this::acceptLoop);
    }

    public int port() {
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
                Member m = new Member(new Join(parts[1], Integer.parseInt(parts[2]), Integer.parseInt(parts[3])), s);
                synchronized (this) {
                    members.add(m);
                    notifyAll();
                }
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
    public List<Join> joins() {
        List<Join> out = new ArrayList<>();
        members.forEach(m -> out.add(m.join()));
        return out;
    }

    /**
     * Waits (up to {@code timeout}) until {@code expectedMembers} have joined, then broadcasts
     * {@code tensors} to every member, in order.
     */
    public void broadcast(int expectedMembers, List<byte[]> tensors, Duration timeout)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (members.size() < expectedMembers) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IOException("timed out after " + timeout + " waiting for " + expectedMembers
                            + " members in the group (" + members.size() + " joined)");
                }
                wait(Math.max(1, left / 1_000_000));
            }
        }
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
