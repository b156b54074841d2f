package org.rollout.trainer;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * How a pull reaches the node that holds the batches. A gateway on another node answers a pull
 * that says it follows ({@code X-Rollout-Follow-Redirect: 1}) with {@code 307} and the same pull on
 * the holder's gateway; this sends the pull there (without the header, so it is served there
 * whatever happened meanwhile) and pulls there first from then on. Nothing is handed out by a
 * redirect, so a holder's gateway that cannot be reached, or answers anything but a batch (200) or
 * none (204), costs nothing but time: the pull goes once more to the contact point without the
 * header, which relays the batch, and no pull follows a redirect for {@link #COOL_DOWN}.
 *
 * <pre>
 *   pull ──► contact point (follow) ──307 Location──► holder's gateway ──200 RBATCH──► trainer
 *                    ▲                                     │ refused, unreachable, 503, …
 *                    └──── pull again (no follow): relayed ◄┘
 *   later pulls ──► holder's gateway first (follow) ── fails ──► the contact points as above
 * </pre>
 *
 * <p>Thread-safe.
 */
final class PullRedirects {
    private static final System.Logger log = System.getLogger(HttpRolloutClient.class.getName());
    /** After a redirect that could not be followed, pulls ask for none for this long. */
    static final Duration COOL_DOWN = Duration.ofSeconds(60);

    private final GatewayCalls calls;
    private final boolean enabled;
    /** The base URL of the holder's gateway that answered the last followed pull, or null. */
    private final AtomicReference<URI> holder = new AtomicReference<>();

    private final AtomicLong noFollowUntil = new AtomicLong(System.nanoTime());
    private final AtomicLong followed = new AtomicLong();
    private final AtomicLong fellBack = new AtomicLong();

    PullRedirects(GatewayCalls calls, boolean enabled) {
        this.calls = calls;
        this.enabled = enabled;
    }

    /** Pulls answered by a holder's gateway after a redirect (followed, or from the remembered holder). */
    long followed() {
        return followed.get();
    }

    /** Redirects that could not be followed: the pull went again to its contact point and was relayed. */
    long fellBack() {
        return fellBack.get();
    }

    /** The holder's gateway pulls go to first, or null. */
    URI holder() {
        return holder.get();
    }

    /**
     * Sends the pull {@code path} (with its query) to the remembered holder's gateway first, else
     * to the contact point {@code base}, following a redirect as the class comment says.
     */
    GatewayCalls.Reply send(URI base, String path, Duration timeout) throws IOException, InterruptedException {
        boolean follow = enabled && System.nanoTime() - noFollowUntil.get() >= 0;
        URI direct = follow ? holder.get() : null;
        if (direct != null) {
            GatewayCalls.Reply r = null;
            String why;
            try {
                r = calls.pull(URI.create(direct + path), timeout, true);
                if (r.status() == 200 || r.status() == 204) {
                    followed.incrementAndGet();
                    return r;
                }
                if (r.status() == 307 && r.location() != null) {
                    // The batches moved on to another node (the collector's node was lost or left).
                    return follow(base, path, timeout, direct, r);
                }
                why = "HTTP " + r.status();
                r.discard();
            } catch (IOException e) {
                GatewayCalls.throwIfInterrupted(e);
                why = GatewayCalls.describe(e);
            }
            holder.compareAndSet(direct, null);
            log.log(
                    System.Logger.Level.DEBUG,
                    "pull at {0}, the gateway of the node that held the batches, failed ({1}); back to {2}",
                    direct,
                    why,
                    base);
        }
        GatewayCalls.Reply r = calls.pull(URI.create(base + path), timeout, follow);
        if (follow && r.status() == 307 && r.location() != null) {
            return follow(base, path, timeout, base, r);
        }
        return r;
    }

    /** Follows {@code redirect} (from {@code from}); on failure pulls at {@code base} without following. */
    private GatewayCalls.Reply follow(URI base, String path, Duration timeout, URI from, GatewayCalls.Reply redirect)
            throws IOException, InterruptedException {
        redirect.discard();
        URI location;
        try {
            location = from.resolve(redirect.location());
        } catch (IllegalArgumentException e) {
            return fallBack(base, path, timeout, null, "a malformed Location '" + redirect.location() + "'");
        }
        URI target = URI.create(location.getScheme() + "://" + location.getRawAuthority());
        String why;
        try {
            GatewayCalls.Reply r = calls.pull(location, timeout, false);
            if (r.status() == 200 || r.status() == 204) {
                holder.set(target);
                followed.incrementAndGet();
                return r;
            }
            why = "HTTP " + r.status();
            r.discard();
        } catch (IOException e) {
            GatewayCalls.throwIfInterrupted(e);
            why = GatewayCalls.describe(e);
        }
        return fallBack(base, path, timeout, target, why);
    }

    private GatewayCalls.Reply fallBack(URI base, String path, Duration timeout, URI target, String why)
            throws IOException, InterruptedException {
        fellBack.incrementAndGet();
        if (target != null) {
            holder.compareAndSet(target, null);
        }
        noFollowUntil.set(System.nanoTime() + COOL_DOWN.toNanos());
        log.log(
                System.Logger.Level.INFO,
                "could not pull from {0}, the gateway of the node that holds the batches ({1}); pulling through {2}"
                        + " (relayed) and following no redirect for {3} s",
                target,
                why,
                base,
                COOL_DOWN.toSeconds());
        return calls.pull(URI.create(base + path), timeout, false);
    }
}
