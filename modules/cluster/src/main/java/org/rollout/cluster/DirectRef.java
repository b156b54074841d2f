package org.rollout.cluster;

/**
 * Where an offered payload is fetched: the sending node's data plane ({@link DataPlane}) and the
 * payload's token, 128 random bits in hex. Travels in the small envelope over Artery.
 */
public record DirectRef(String host, int port, String token) implements CborSerializable {}
