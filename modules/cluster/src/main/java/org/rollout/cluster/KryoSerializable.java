package org.rollout.cluster;

/**
 * Marks a message that carries tensor payloads and crosses nodes as Kryo ({@link
 * KryoPayloadSerializer}): {@link Collector.GroupFinished} (a {@code TrainingGroup}) and {@link
 * Collector.BatchReply} (a {@code TrainingBatch}). The binding is in this module's {@code
 * reference.conf}.
 *
 * <p>Contract: the class, and every class it carries, must be in {@link KryoRegistrations}'s fixed
 * list; registration is required, so anything else is refused (logged on the sender, the message
 * dropped, the connection unharmed). Such a message bigger than {@code
 * rollout.large_payload_threshold} does not travel as one message between nodes: its sender streams
 * it through {@link LargePayloads}.
 */
public interface KryoSerializable {}
