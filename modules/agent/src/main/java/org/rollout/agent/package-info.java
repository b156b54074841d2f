/** The OpenAI-compatible proxy that records every token, and the workflows that run agents behind it. */
package org.rollout.agent;
