package org.rollout.benchmarks.e2e;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.config.WeightTransfer;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.WeightUpdateReport;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * Weight updates by upload ({@code weight_transfer = http}) against a raw loopback socket, in one
 * run (benchmarks/RESULTS.md, "Weight upload"): {@code rounds} updates of a weight file to {@code
 * servers} built-in model servers in this JVM, each update streaming the file to every server and
 * waiting for its load (parse, checks, swap), against the same bytes written to a loopback socket
 * whose reader discards them.
 *
 * <pre>
 *   java -cp benchmarks/target/benchmarks.jar org.rollout.benchmarks.e2e.WeightUploadThroughput [rounds] [servers]
 * </pre>
 */
public final class WeightUploadThroughput {
    private WeightUploadThroughput() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int serverCount = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        Path dir = Files.createTempDirectory("weight-upload-bench");
        List<Path> files = new ArrayList<>();
        for (int v = 1; v <= rounds; v++) {
            Path f = dir.resolve("v" + v + ".rlm");
            TinyLmWeights.seeded(v).withVersion(v).write(f);
            files.add(f);
        }
        long fileBytes = Files.size(files.getFirst());
        List<ModelServer> servers = new ArrayList<>();
        List<ServerAddress> addresses = new ArrayList<>();
        for (int i = 0; i < serverCount; i++) {
            ModelServer s = ModelServer.start(ModelServerConfig.defaults().withSeed(0));
            servers.add(s);
            addresses.add(new ServerAddress("127.0.0.1", s.port()));
        }
        try (RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                .serverAddresses(addresses)
                .requestTimeout(Duration.ofSeconds(60))
                .weightTransfer(WeightTransfer.HTTP)
                .build())) {
            int warm = Math.min(20, rounds / 4);
            for (int v = 1; v <= warm; v++) {
                check(engine.updateWeights(files.get(v - 1), v));
            }
            long t0 = System.nanoTime();
            for (int v = warm + 1; v <= rounds; v++) {
                check(engine.updateWeights(files.get(v - 1), v));
            }
            double uploadSeconds = (System.nanoTime() - t0) / 1e9;
            long uploaded = (long) (rounds - warm) * serverCount * fileBytes;
            double raw = rawLoopback(files.get(0), (rounds - warm) * serverCount);
            System.out.printf(
                    Locale.ROOT,
                    "weight file %d bytes; %d updates x %d servers after %d warm-up updates%n",
                    fileBytes,
                    rounds - warm,
                    serverCount,
                    warm);
            System.out.printf(
                    Locale.ROOT,
                    "upload (engine -> HTTP -> server load, every server): %.1f MB/s, %.2f ms per update%n",
                    uploaded / uploadSeconds / 1e6,
                    uploadSeconds * 1e3 / (rounds - warm));
            System.out.printf(Locale.ROOT, "raw loopback socket, same bytes: %.1f MB/s%n", raw / 1e6);
            System.out.printf(Locale.ROOT, "upload / raw: %.3f%n", uploaded / uploadSeconds / raw);
        } finally {
            for (ModelServer s : servers) {
                s.close();
            }
        }
    }

    private static void check(WeightUpdateReport r) {
        if (!r.allSucceeded()) {
            throw new IllegalStateException(r.summary());
        }
    }

    /** Bytes per second of {@code times} copies of {@code file} written to a loopback socket whose reader discards them. */
    private static double rawLoopback(Path file, int times) throws IOException, InterruptedException {
        byte[] bytes = Files.readAllBytes(file);
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            long[] received = new long[1];
            Thread reader = Thread.ofPlatform().start(() -> {
                try (Socket s = server.accept();
                        InputStream in = s.getInputStream()) {
                    byte[] buf = new byte[64 * 1024];
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        received[0] += n;
                    }
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            long t0 = System.nanoTime();
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                    OutputStream out = s.getOutputStream()) {
                for (int i = 0; i < times; i++) {
                    out.write(bytes);
                }
            }
            reader.join(Duration.ofSeconds(60));
            double seconds = (System.nanoTime() - t0) / 1e9;
            return received[0] / seconds;
        }
    }
}
