package org.rollout.cluster;

import org.apache.pekko.actor.NoSerializationVerificationNeeded;

/**
 * Marks a message that never leaves its JVM: what slots tell their group, what a group hears from
 * its runner, timers, piped results and adapted listings. No serializer is bound to it, so one
 * sent to another node by mistake is refused with a logged error; {@code
 * pekko.actor.serialize-messages = on} (tests) skips it, through Pekko's {@link
 * NoSerializationVerificationNeeded}.
 */
interface NodeLocal extends NoSerializationVerificationNeeded {}
