package org.rollout.modelserver;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/**
 * The built-in server's stand-in for an NCCL weight-update group: a TCP connection to the group's
 * master (the trainer's rank 0) at {@code master_address:master_port}, over which rank 0
 * broadcasts the tensors of each update. Real servers join an NCCL group and receive the tensors
 * GPU to GPU; this moves the same bytes over a socket so that the control plane can be tested for
 * real without GPUs (docs/model-server.md, "Weight-update group").
 *
 * <p>Framing, all integers big-endian:
 *
 * <pre>
 *   join   member → rank 0:  "ROLLOUT-WEIGHT-GROUP &lt;group_name&gt; &lt;rank&gt; &lt;world_size&gt;\n" (UTF-8)
 *          rank 0 → member:  "OK\n", or "ERR &lt;reason&gt;\n" and close
 *   update rank 0 → member:  per tensor, in the order of the update's names:
 *                            8-byte length n, then n bytes (the tensor's raw bytes)
 * </pre>
 *
 * A member checks each length against its tensor's shape and dtype; the bytes of all tensors, in
 * order, form a weight file, which the server loads as it loads one from disk.
 */
final class WeightGroup implements Closeable {
    private final String name;
    private final int rank;
    private final Socket socket;
    private final DataInputStream in;

    private WeightGroup(String name, int rank, Socket socket) throws IOException {
        this.name = name;
        this.rank = rank;
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    }

    /**
     * Joins group {@code name} at {@code host:port} as {@code rank} of {@code worldSize}.
     *
     * @throws IOException when rank 0 cannot be reached within {@code timeoutMillis} or refuses
     */
    static WeightGroup join(String host, int port, String name, int rank, int worldSize, int timeoutMillis)
            throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMillis);
            s.setSoTimeout(timeoutMillis);
            OutputStream out = s.getOutputStream();
            out.write(("ROLLOUT-WEIGHT-GROUP " + name + " " + rank + " " + worldSize + "\n")
                    .getBytes(StandardCharsets.UTF_8));
            out.flush();
            WeightGroup g = new WeightGroup(name, rank, s);
            String answer = g.readLine();
            if (!answer.equals("OK")) {
                throw new IOException("rank 0 at " + host + ":" + port + " refused rank " + rank + " of group '" + name
                        + "': " + answer);
            }
            return g;
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new EOFException("rank 0 closed the connection");
            }
            if (line.size() > 4096) {
                throw new IOException("rank 0's answer is longer than 4096 bytes");
            }
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    String name() {
        return name;
    }

    int rank() {
        return rank;
    }

    /** One tensor of an update: its name, dtype and shape. */
    record Tensor(String name, String dtype, List<Long> shape) {
        /** Its size in bytes. */
        long bytes() {
            long n = dtypeSize(dtype);
            for (long d : shape) {
                n = Math.multiplyExact(n, d);
            }
            return n;
        }
    }

    /**
     * The element size of a torch dtype name ({@code torch.} prefix allowed).
     *
     * @throws IllegalArgumentException for a dtype this server does not know
     */
    static int dtypeSize(String dtype) {
        String d = dtype.toLowerCase(Locale.ROOT);
        if (d.startsWith("torch.")) {
            d = d.substring("torch.".length());
        }
        return switch (d) {
            case "uint8", "int8", "bool", "float8_e4m3fn", "float8_e5m2" -> 1;
            case "bfloat16", "float16", "half", "int16" -> 2;
            case "float32", "float", "int32" -> 4;
            case "float64", "double", "int64", "long" -> 8;
            default -> throw new IllegalArgumentException("unknown dtype '" + dtype + "'");
        };
    }

    /**
     * Receives one update's broadcast: every tensor's bytes, in order, concatenated. A length that
     * does not match its tensor's shape and dtype is read past (the stream stays in step with rank
     * 0) and then reported.
     *
     * @throws IllegalArgumentException naming the first tensor whose length did not match
     * @throws IOException when rank 0 goes away or the socket times out; the group is then unusable
     */
    byte[] receive(List<Tensor> tensors) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        String mismatch = null;
        byte[] buffer = new byte[64 * 1024];
        for (Tensor t : tensors) {
            long length = in.readLong();
            long expected = t.bytes();
            if (length < 0) {
                throw new IOException("rank 0 sent a negative length for tensor '" + t.name() + "'");
            }
            boolean keep = length == expected && mismatch == null;
            if (length != expected && mismatch == null) {
                mismatch = "tensor '" + t.name() + "' (" + t.dtype() + " " + t.shape() + ") is " + expected
                        + " bytes, rank 0 broadcast " + length;
            }
            long left = length;
            while (left > 0) {
                int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                if (n < 0) {
                    throw new EOFException("rank 0 closed the connection inside tensor '" + t.name() + "'");
                }
                if (keep) {
                    all.write(buffer, 0, n);
                }
                left -= n;
            }
        }
        if (mismatch != null) {
            throw new IllegalArgumentException(mismatch);
        }
        return all.toByteArray();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
