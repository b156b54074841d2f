/**
 * Shared test support for every module of the Rollout Engine: a small seeded property-test
 * harness. {@link org.rollout.testing.Property#forAll} runs a check on many values of a {@link
 * org.rollout.testing.Gen}, deterministically by default, and on failure reports the value and the
 * {@code -Drollout.property.seed=…} option that reproduces it.
 *
 * <p>This module depends on the JUnit Jupiter API only, and on nothing of ours, so that every other
 * module can use it from its tests.
 */
package org.rollout.testing;
