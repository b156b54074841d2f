package org.rollout.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What the model server's request reader accepts, and what it answers to what it cannot read. */
class Http1RequestReaderTest {

    private static Http1Server.Request read(String raw) throws Exception {
        return Http1RequestReader.read(in(raw), new ByteArrayOutputStream(), new InetSocketAddress("127.0.0.1", 1));
    }

    private static ByteArrayInputStream in(String raw) {
        return new ByteArrayInputStream(raw.getBytes(StandardCharsets.ISO_8859_1));
    }

    private static int statusOf(String raw) {
        try {
            read(raw);
        } catch (Http1RequestReader.BadRequest e) {
            return e.status;
        } catch (Exception e) {
            throw new AssertionError("expected a BadRequest, got " + e, e);
        }
        throw new AssertionError("expected a BadRequest, the request was read");
    }

    @Test
    void aRequestWithAContentLengthBodyIsReadWithItsPathQueryAndHeaders() throws Exception {
        Http1Server.Request r = read("POST /generate?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                + "X-Twice: 1\r\nx-twice: 2\r\n\r\nhello");
        assertThat(r.method()).isEqualTo("POST");
        assertThat(r.path()).isEqualTo("/generate");
        assertThat(r.query()).isEqualTo("x=1");
        assertThat(r.version()).isEqualTo("HTTP/1.1");
        assertThat(new String(r.body(), StandardCharsets.US_ASCII)).isEqualTo("hello");
        assertThat(r.header("X-TWICE")).as("repeated fields joined").isEqualTo("1, 2");
    }

    @Test
    void aChunkedBodyWithExtensionsAndTrailersIsReassembled() throws Exception {
        Http1Server.Request r = read("POST /g HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n");
        assertThat(new String(r.body(), StandardCharsets.US_ASCII)).isEqualTo("abc0123456789");
    }

    @Test
    void bareLineFeedsAndLeadingEmptyLinesAreTolerated() throws Exception {
        Http1Server.Request r = read("\r\n\nGET /health HTTP/1.0\nHost: a\n\n");
        assertThat(r.path()).isEqualTo("/health");
        assertThat(r.version()).isEqualTo("HTTP/1.0");
        assertThat(r.body()).isEmpty();
    }

    @Test
    void aRequestThatExpectsContinueIsToldToSendItsBody() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Http1Server.Request r = Http1RequestReader.read(
                in("POST /g HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok"),
                out,
                new InetSocketAddress("127.0.0.1", 1));
        assertThat(out.toString(StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
        assertThat(r.body()).hasSize(2);
    }

    @Test
    void anEmptyStreamIsTheCleanEndOfAConnection() throws Exception {
        assertThat(read("")).isNull();
        assertThat(read("\r\n")).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "request line of two parts         | 'GET /\\r\\n\\r\\n'                                              | 400",
                "request line of four parts        | 'GET / x HTTP/1.1\\r\\n\\r\\n'                                   | 400",
                "double space in the request line  | 'GET  / HTTP/1.1\\r\\n\\r\\n'                                    | 400",
                "not HTTP/1.x                      | 'GET / HTTP/2\\r\\n\\r\\n'                                       | 400",
                "header without a colon            | 'GET / HTTP/1.1\\r\\nno colon\\r\\n\\r\\n'                       | 400",
                "header with an empty name         | 'GET / HTTP/1.1\\r\\n: v\\r\\n\\r\\n'                            | 400",
                "Content-Length not a number       | 'POST / HTTP/1.1\\r\\nContent-Length: ten\\r\\n\\r\\n'           | 400",
                "Content-Length with a sign        | 'POST / HTTP/1.1\\r\\nContent-Length: +5\\r\\n\\r\\nhello'       | 400",
                "Content-Length negative           | 'POST / HTTP/1.1\\r\\nContent-Length: -1\\r\\n\\r\\n'            | 400",
                "two Content-Lengths               | 'POST / HTTP/1.1\\r\\nContent-Length: 1\\r\\nContent-Length: 1\\r\\n\\r\\na' | 400",
                "Content-Length above the limit    | 'POST / HTTP/1.1\\r\\nContent-Length: 67108865\\r\\n\\r\\n'      | 413",
                "Content-Length beyond a long      | 'POST / HTTP/1.1\\r\\nContent-Length: 99999999999999999999\\r\\n\\r\\n' | 400",
                "chunk size not hex                | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nzz\\r\\n' | 400",
                "chunk size negative               | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n-1\\r\\n' | 400",
                "chunk size empty                  | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n\\r\\n' | 400",
                "chunk size above the limit        | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n4000001\\r\\n' | 413",
                "chunk longer than its size line   | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n1\\r\\nabc\\r\\n0\\r\\n\\r\\n' | 400",
            })
    void malformedOrOversizedRequestsGetTheirStatus(String what, String raw, int status) {
        assertThat(statusOf(unescape(raw))).as(what).isEqualTo(status);
    }

    @Test
    void aRequestLineLongerThanTheLimitIs431() {
        assertThat(statusOf("GET /" + "a".repeat(Http1RequestReader.MAX_LINE) + " HTTP/1.1\r\n\r\n"))
                .isEqualTo(431);
    }

    @Test
    void headerFieldsAboveTheLimitInAllAre431() {
        StringBuilder raw = new StringBuilder("GET / HTTP/1.1\r\n");
        String field = "X-Filler: " + "v".repeat(1000) + "\r\n";
        for (int i = 0; i <= Http1RequestReader.MAX_HEADER_BYTES / 1000; i++) {
            raw.append(field);
        }
        assertThat(statusOf(raw + "\r\n")).isEqualTo(431);
    }

    @Test
    void trailersAboveTheHeaderLimitAre431() {
        StringBuilder raw = new StringBuilder("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
        String field = "X-Trailer: " + "v".repeat(1000) + "\r\n";
        for (int i = 0; i <= Http1RequestReader.MAX_HEADER_BYTES / 1000; i++) {
            raw.append(field);
        }
        assertThat(statusOf(raw + "\r\n")).isEqualTo(431);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "inside the request line | 'GET /hea'",
                "inside the headers      | 'GET / HTTP/1.1\\r\\nHost: a'",
                "inside a body           | 'POST / HTTP/1.1\\r\\nContent-Length: 10\\r\\n\\r\\nabc'",
                "inside a chunk          | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nab'",
                "before the last chunk   | 'POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n2\\r\\nab\\r\\n'",
            })
    void aStreamThatEndsInsideARequestIsAClientThatLeft(String what, String raw) {
        assertThatThrownBy(() -> read(unescape(raw)))
                .as(what)
                .isInstanceOf(IOException.class)
                .isNotInstanceOf(Http1RequestReader.BadRequest.class);
    }

    private static String unescape(String s) {
        return s.replace("\\r", "\r").replace("\\n", "\n");
    }
}
