package org.rollout.inference;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.rollout.config.ServerAddress;

/**
 * The engine's HTTP calls over its one shared {@link HttpClient}: sent asynchronously and awaited
 * with a deadline, so that a waiting thread can be interrupted (the exchange is then cancelled,
 * which closes its connection) and a server that sends headers and then stalls cannot hold a
 * caller past {@code timeout} plus a small grace.
 */
final class HttpExchanges {
    /** How long past the request timeout the await backstop waits for a stalled body. */
    private static final Duration BACKSTOP_GRACE = Duration.ofSeconds(1);

    private final HttpClient client;

    HttpExchanges(HttpClient client) {
        this.client = client;
    }

    HttpClient client() {
        return client;
    }

    /** Starts a JSON POST of {@code body} to {@code uri}. */
    CompletableFuture<HttpResponse<byte[]>> post(URI uri, byte[] body, Duration timeout) {
        HttpRequest request = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                .build();
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Starts {@code call} on {@code server}. */
    CompletableFuture<HttpResponse<byte[]>> start(ServerAddress server, ControlCall call, Duration timeout) {
        URI uri = server.uri(call.path());
        if (call.method().equals("GET")) {
            HttpRequest request =
                    HttpRequest.newBuilder(uri).timeout(timeout).GET().build();
            return client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
        }
        if (call.file() != null) {
            HttpRequest request;
            try {
                request = HttpRequest.newBuilder(uri)
                        .timeout(timeout)
                        .header("Content-Type", "application/octet-stream")
                        .POST(HttpRequest.BodyPublishers.ofFile(call.file()))
                        .build();
            } catch (FileNotFoundException e) {
                return CompletableFuture.failedFuture(
                        new IOException("cannot read " + call.file() + " to send it: " + e.getMessage(), e));
            }
            return client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
        }
        return post(uri, call.body().getBytes(StandardCharsets.UTF_8), timeout);
    }

    /** Sends {@code call} and waits for its response. */
    HttpResponse<byte[]> call(ServerAddress server, ControlCall call, Duration timeout)
            throws IOException, InterruptedException {
        return await(start(server, call, timeout), timeout);
    }

    /**
     * Waits for {@code exchange}. On interruption or on the backstop deadline the exchange is
     * cancelled (closing its connection) before this method throws.
     *
     * @throws HttpTimeoutException when no complete response arrived in time
     * @throws IOException when the exchange failed (connection refused, reset, cancelled)
     * @throws InterruptedException when the calling thread was interrupted
     */
    static HttpResponse<byte[]> await(CompletableFuture<HttpResponse<byte[]>> exchange, Duration timeout)
            throws IOException, InterruptedException {
        try {
            return exchange.get(timeout.plus(BACKSTOP_GRACE).toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            exchange.cancel(true);
            throw e;
        } catch (TimeoutException e) {
            exchange.cancel(true);
            throw new HttpTimeoutException("no complete response within " + seconds(timeout) + " s");
        } catch (CancellationException e) {
            throw new IOException("the request was cancelled", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            // The JDK's client reports a socket it could not open (the process is out of file
            // descriptors: "Too many open files") as an InternalError around the SocketException.
            // It is a transport failure like a refused connection: retried on a server after the
            // backoff, not a failed group.
            if (cause instanceof InternalError ie && ie.getCause() instanceof IOException io) {
                throw io;
            }
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new IOException(cause);
        }
    }

    /** A short description of a transport failure, for error messages and server stats. */
    static String describe(IOException e, Duration timeout) {
        if (e instanceof HttpConnectTimeoutException) {
            return "connect timed out";
        }
        if (e instanceof HttpTimeoutException) {
            return "timed out after " + seconds(timeout) + " s";
        }
        if (e instanceof ConnectException) {
            return "connection refused or unreachable";
        }
        String msg = e.getMessage();
        return "I/O error (" + e.getClass().getSimpleName() + (msg == null ? "" : ": " + msg) + ")";
    }

    static boolean isSuccess(int status) {
        return status >= 200 && status < 300;
    }

    static String seconds(Duration d) {
        return String.valueOf(d.toMillis() / 1000.0);
    }
}
