package org.rollout.config;

/** What a dataset reader does with a malformed line ({@code rollout.dataset.on_malformed}). */
public enum OnMalformed {
    /** Report the line and go on. */
    SKIP,
    /** Refuse to start. */
    FAIL
}
