package org.rollout.testing;

import java.util.OptionalInt;
import java.util.function.UnaryOperator;

/**
 * How a run of properties is configured, read from system properties: the base seed, an optional
 * trial count that replaces every property's own, and a multiplier for soak runs.
 *
 * @param seed the base seed every trial's randomness derives from
 * @param trials when present, the trial count of every property, replacing its declared count
 * @param multiplier scales the trial count (declared or replaced); positive
 */
record PropertySettings(long seed, OptionalInt trials, double multiplier) {

    PropertySettings {
        if (trials.isPresent() && trials.getAsInt() < 1) {
            throw new IllegalArgumentException(Property.TRIALS_PROPERTY + " must be >= 1, got " + trials.getAsInt());
        }
        if (!(multiplier > 0) || !Double.isFinite(multiplier)) {
            throw new IllegalArgumentException(
                    Property.MULTIPLIER_PROPERTY + " must be a finite number > 0, got " + multiplier);
        }
    }

    static PropertySettings fromSystemProperties() {
        return from(System::getProperty);
    }

    /** Reads the settings through {@code lookup} (a system-property lookup, or a map in tests). */
    static PropertySettings from(UnaryOperator<String> lookup) {
        long seed = Property.DEFAULT_SEED;
        String seedText = lookup.apply(Property.SEED_PROPERTY);
        if (seedText != null) {
            try {
                seed = Long.parseLong(seedText.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        Property.SEED_PROPERTY + " must be a decimal long, got '" + seedText + "'", e);
            }
        }
        OptionalInt trials = OptionalInt.empty();
        String trialsText = lookup.apply(Property.TRIALS_PROPERTY);
        if (trialsText != null) {
            try {
                trials = OptionalInt.of(Integer.parseInt(trialsText.strip()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        Property.TRIALS_PROPERTY + " must be a whole number >= 1, got '" + trialsText + "'", e);
            }
        }
        double multiplier = 1.0;
        String multiplierText = lookup.apply(Property.MULTIPLIER_PROPERTY);
        if (multiplierText != null) {
            try {
                multiplier = Double.parseDouble(multiplierText.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        Property.MULTIPLIER_PROPERTY + " must be a finite number > 0, got '" + multiplierText + "'", e);
            }
        }
        return new PropertySettings(seed, trials, multiplier);
    }

    /** The trials to run for a property that declares {@code declared}: at least one. */
    int trialsFor(int declared) {
        double scaled = Math.ceil(trials.orElse(declared) * multiplier);
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, scaled));
    }
}
