package org.rollout.cluster;

/**
 * Marks a message that may cross nodes as Jackson CBOR: every control message and reply of the
 * coordinator, the group runners, the weight version and the collector (commands, status, replies,
 * the stream-ref envelopes of large payloads). The binding is in this module's {@code
 * reference.conf} ({@code pekko.actor.serialization-bindings}).
 *
 * <p>Contract: implementations are records (or plain values) whose fields Jackson can write and
 * read back without type hints: primitives, strings, enums, {@code Duration}, lists and maps of
 * those, records of those, typed {@code ActorRef}s and stream refs (Pekko's Jackson modules). A
 * field whose declared type is an interface needs {@code @JsonTypeInfo}; none has one today.
 * {@code Map<String, Object>} values come back as JSON types ({@code Integer}/{@code Long}/{@code
 * Double}, {@code String}, {@code Boolean}, lists, maps), so a prompt's data item must be made of
 * those to mean the same on every node.
 *
 * <p>Pitfall: a message that is not marked (and is not a Pekko message) has no serializer and is
 * refused with a logged error when sent to another node; Java serialization is off.
 */
public interface CborSerializable {}
