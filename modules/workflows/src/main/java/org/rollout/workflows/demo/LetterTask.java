package org.rollout.workflows.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The demo task, "letters": each prompt asks for one lowercase letter and shows it, and the reward
 * ({@link LetterReward}) pays for lowercase letters and more for the asked one.
 *
 * <pre>
 *   {"messages": [{"role": "user", "content": "Reply with the letter q: qqqqqqqq"}], "target": "q"}
 * </pre>
 *
 * <p>Training items are a pure function of {@code (seed, index)}, so a run, a restart and another
 * node see the same sequence and {@code item(i)} can be called in any order (the runtime's {@code
 * GeneratedPromptSource} calls it with 0, 1, 2, …). The items are <em>balanced</em>: indices {@code
 * 26k … 26k+25} ask for every letter once, in an order shuffled by {@code (seed, k)}. A training
 * batch of 26 consecutive prompts therefore holds every letter, so each letter's parameters get a
 * gradient every step (with independent draws a batch of 26 misses about 9 letters). Evaluation
 * items are one per letter, a to z. Items are immutable maps of strings and lists (JSON-ready).
 *
 * <p>Why the prompt shows the letter eight times: the built-in model reads the prompt only
 * through the normalised bag of its tokens ({@code h} in {@code docs/model-server.md}); a letter
 * named once is about 4% of that bag (λ = 0.85), too faint to learn from in a demo-length run; with
 * eight more copies and the demo model's λ = 1 it is about 60%. See {@code docs/demo.md}.
 * Stateless and thread-safe.
 */
public final class LetterTask {
    /** The seed of {@link #item(long)}. */
    public static final long DEFAULT_SEED = 7L;
    /** The data key of the asked letter. */
    public static final String TARGET_KEY = "target";
    /** How many times the prompt shows the letter after naming it. */
    public static final int SHOWN = 8;

    private static final int LETTERS = 26;

    private LetterTask() {}

    /** Training item {@code index} with the default seed. */
    public static Map<String, Object> item(long index) {
        return item(DEFAULT_SEED, index);
    }

    /**
     * Training item {@code index} of the sequence seeded with {@code seed}: letter {@code index mod
     * 26} of the permutation of a–z drawn for block {@code floor(index / 26)}.
     */
    public static Map<String, Object> item(long seed, long index) {
        long block = Math.floorDiv(index, LETTERS);
        int position = (int) Math.floorMod(index, LETTERS);
        return itemFor((char) ('a' + permutation(seed, block)[position]));
    }

    /** A Fisher–Yates shuffle of 0..25 by a generator seeded from {@code (seed, block)}. */
    private static int[] permutation(long seed, long block) {
        int[] perm = new int[LETTERS];
        for (int i = 0; i < LETTERS; i++) {
            perm[i] = i;
        }
        // SplittableRandom scrambles its seed, so neighbouring blocks get independent orders.
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + block);
        for (int i = LETTERS - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        return perm;
    }

    /** One evaluation item per letter, a to z. */
    public static List<Map<String, Object>> evalItems() {
        List<Map<String, Object>> items = new ArrayList<>(LETTERS);
        for (char c = 'a'; c <= 'z'; c++) {
            items.add(itemFor(c));
        }
        return List.copyOf(items);
    }

    /**
     * The item that asks for {@code target}.
     *
     * @throws IllegalArgumentException when {@code target} is not a lowercase ASCII letter
     */
    public static Map<String, Object> itemFor(char target) {
        if (target < 'a' || target > 'z') {
            throw new IllegalArgumentException("the target must be a lowercase ASCII letter, got '" + target + "'");
        }
        return Map.of(
                "messages",
                List.of(Map.of("role", "user", "content", prompt(target))),
                TARGET_KEY,
                String.valueOf(target));
    }

    /** The user message that asks for {@code target}: {@code "Reply with the letter q: qqqqqqqq"}. */
    public static String prompt(char target) {
        return "Reply with the letter " + target + ": " + String.valueOf(target).repeat(SHOWN);
    }
}
