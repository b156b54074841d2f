/** Example agents written against the OpenAI API, trained through the engine's proxy. */
package org.rollout.examples.agents;
