package org.rollout.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Fuzz;
import org.rollout.testing.Property;

/**
 * Fuzzes the request reader with random bytes, truncations, mutations and splices of
 * real requests. Property: every input is read as a request, refused with 400, 413 or 431, or ends
 * as a client that left (an {@link IOException}); never another exception, never a hang. CI runs a
 * few thousand inputs; {@code -Drollout.fuzz.inputs=N} runs N (docs/bad-input.md).
 */
class Http1RequestReaderFuzzTest {
    private static final List<String> SAMPLES = List.of(
            "POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n"
                    + "{\"input_ids\":[1,2,3],\"x\":1}",
            "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
                    + "5;ext\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
            "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "GET /metrics?x=1&y HTTP/1.1\nHost: a\n\n");

    private static final List<String> TOKENS = List.of(
            "\r\n",
            "\n",
            "\r",
            " ",
            ":",
            ";",
            "HTTP/1.1",
            "HTTP/1.0",
            "HTTP/2",
            "Content-Length: ",
            "Transfer-Encoding: chunked",
            "Expect: 100-continue",
            "0",
            "-1",
            "+5",
            "ffffffff",
            "7fffffff",
            "99999999999999999999",
            "4000001",
            "\u0000",
            "é");

    @Test
    void everyInputIsReadOrRefusedWithAStatusOrEndsAsAClientThatLeft() throws Exception {
        List<byte[]> samples = SAMPLES.stream()
                .map(s -> s.getBytes(StandardCharsets.ISO_8859_1))
                .toList();
        try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
            Property.forAll("http1Requests", Fuzz.inputs(3_000), Fuzz.bytes(samples, TOKENS), input -> {
                Throwable t = watchdog.run(
                        input,
                        () -> Http1RequestReader.read(
                                new ByteArrayInputStream(input.bytes()),
                                new ByteArrayOutputStream(),
                                new InetSocketAddress("127.0.0.1", 1)));
                if (t instanceof Http1RequestReader.BadRequest bad) {
                    assertThat(bad.status).as(bad.getMessage()).isIn(400, 413, 431);
                    assertThat(bad.getMessage().length()).as("a short message").isLessThan(300);
                } else if (t != null) {
                    assertThat(t).isInstanceOf(IOException.class);
                }
            });
        }
    }

    /**
     * A body read as a stream ({@link Http1RequestReader#bodyStream}, for uploads) is the body read
     * whole, byte for byte, whenever the whole reading accepts the request within its limit; any
     * other input ends the stream with a status refusal or an {@link IOException}, never another
     * exception, never a hang.
     */
    @Test
    void aStreamedBodyIsTheBodyReadWhole() throws Exception {
        List<byte[]> samples = SAMPLES.stream()
                .map(s -> s.getBytes(StandardCharsets.ISO_8859_1))
                .toList();
        try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
            Property.forAll("http1StreamedBodies", Fuzz.inputs(3_000), Fuzz.bytes(samples, TOKENS), input -> {
                Http1Server.Request[] whole = new Http1Server.Request[1];
                Throwable wholeFailure = watchdog.run(
                        input,
                        () -> whole[0] = Http1RequestReader.read(
                                new ByteArrayInputStream(input.bytes()),
                                new ByteArrayOutputStream(),
                                new InetSocketAddress("127.0.0.1", 1)));
                byte[][] streamed = new byte[1][];
                boolean[] ended = new boolean[1];
                Throwable streamFailure = watchdog.run(input, () -> {
                    ByteArrayInputStream in = new ByteArrayInputStream(input.bytes());
                    Http1RequestReader.Head head =
                            Http1RequestReader.readHead(in, new InetSocketAddress("127.0.0.1", 1));
                    if (head != null) {
                        streamed[0] = Http1RequestReader.bodyStream(in, head.headers(), () -> ended[0] = true)
                                .readAllBytes();
                    }
                    return null;
                });
                if (wholeFailure == null && whole[0] != null) {
                    assertThat(streamFailure)
                            .as("the streamed reading of an accepted request")
                            .isNull();
                    assertThat(streamed[0]).isEqualTo(whole[0].body());
                    assertThat(ended[0]).as("the end of the body is signalled").isTrue();
                } else if (streamFailure instanceof Http1RequestReader.BadRequest bad) {
                    assertThat(bad.status).as(bad.getMessage()).isIn(400, 431);
                } else if (streamFailure != null) {
                    assertThat(streamFailure).isInstanceOf(IOException.class);
                }
            });
        }
    }
}
