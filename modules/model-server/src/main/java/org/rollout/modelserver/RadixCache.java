package org.rollout.modelserver;

import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * A prefix cache over token ids, modelled on SGLang's radix cache: a compressed trie whose edges
 * are runs of tokens, holding at most {@code capacity} tokens in all. It stands for the KV entries
 * a GPU server keeps after a request ends, so that the next request sharing a prefix skips that
 * part of its prefill. The built-in model keeps no KV (it always computes its whole context), so
 * the cache only decides how many prompt tokens a request is charged prefill for and reports as
 * {@code cached_tokens}; it never changes an output.
 *
 * <p>Each namespace (the base model, each LoRA adapter) has a trie of its own: a prefix cached
 * under one is never found under another, as KV computed with other weights is not reusable.
 * Namespaces are compared with {@code equals}.
 *
 * <p>Lifecycle of a request, as in SGLang's scheduler:
 *
 * <ol>
 *   <li>{@link #admit}: the longest cached prefix of the prompt (at most {@code reusable} tokens)
 *       is its hit; the whole prompt is then inserted (its prefill computes it) and the path to
 *       its end locked, so nothing the request uses is evicted while it runs;
 *   <li>{@link #release}: the finished sequence is inserted and the lock dropped.
 * </ol>
 *
 * <p>Eviction: when an insertion needs room, whole leaves are dropped, least recently used first
 * (every match and insertion refreshes the nodes on its path). A locked node, or one with children,
 * is never evicted; when the locked part leaves too little room, only the part of the sequence that
 * fits is inserted, so the token count never exceeds the capacity.
 *
 * <p>{@link #flush()} empties every trie (new weights make every cached KV entry wrong); leases
 * taken before a flush release without inserting anything.
 *
 * <p>Thread-safe: every method is synchronized. The scheduler thread is its only writer; statistics
 * are read from request threads.
 */
final class RadixCache {
    private static final int[] NO_TOKENS = new int[0];

    /** A request's hold on the cache between {@link #admit} and {@link #release}. */
    static final class Lease {
        private final Object namespace;
        private final int cachedTokens;
        private final long epoch;
        private final Node locked;
        private boolean released;

        private Lease(Object namespace, int cachedTokens, long epoch, Node locked) {
            this.namespace = namespace;
            this.cachedTokens = cachedTokens;
            this.epoch = epoch;
            this.locked = locked;
        }

        /** The prompt tokens found in the cache on admission: the request's prefill skips them. */
        int cachedTokens() {
            return cachedTokens;
        }
    }

    /** An edge of the trie and the node it leads to. Roots have an empty key and no parent. */
    private static final class Node {
        final long id;
        Node parent;
        int[] key;
        final Map<Integer, Node> children = new HashMap<>(4);
        /** Running requests whose locked path passes through this node. */
        int lockRef;

        long lastAccess;
        /** Whether it is in {@link #evictable}: a non-root leaf with no lock. */
        boolean evictable;

        Node(long id, Node parent, int[] key) {
            this.id = id;
            this.parent = parent;
            this.key = key;
        }
    }

    private final int capacity;
    private final Map<Object, Node> roots = new HashMap<>();
    /** Leaves that may be evicted, least recently used first. */
    private final TreeSet<Node> evictable =
            new TreeSet<>(Comparator.<Node>comparingLong(n -> n.lastAccess).thenComparingLong(n -> n.id));

    private long clock;
    private long nodeIds;
    private long epoch;
    private long cachedTokens;
    private long lockedTokens;
    private long promptTokens;
    private long hitTokens;
    private long evictedTokens;
    private long flushes;

    /** @param capacity the most tokens held at once; 0 caches nothing */
    RadixCache(int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("prefix cache capacity must be >= 0 tokens, got " + capacity);
        }
        this.capacity = capacity;
    }

    /**
     * Admits a request: finds its hit (the longest cached prefix of {@code prompt}, at most {@code
     * reusable} tokens), inserts the prompt and locks the path to its end.
     *
     * @param reusable the most prompt tokens the request may take from the cache (SGLang keeps at
     *     least the last prompt token, and every position whose logprob is asked for, to compute)
     */
    synchronized Lease admit(Object namespace, int[] prompt, int reusable) {
        int hit = match(namespace, prompt, reusable);
        promptTokens += prompt.length;
        hitTokens += hit;
        Node end = insertPath(namespace, prompt);
        lock(end, 1);
        return new Lease(namespace, hit, epoch, end);
    }

    /**
     * Ends a request's lease: inserts {@code sequence} (unless null, or the cache was flushed since
     * its admission: that sequence's KV came from other weights) and unlocks its path. Idempotent.
     */
    synchronized void release(Lease lease, int[] sequence) {
        if (lease.released) {
            return;
        }
        lease.released = true;
        if (lease.epoch == epoch) {
            if (sequence != null) {
                insertPath(lease.namespace, sequence);
            }
            lock(lease.locked, -1);
        }
    }

    /**
     * The length of the longest cached prefix of {@code tokens[0, min(limit, length))} under {@code
     * namespace}; refreshes the nodes on its path.
     */
    synchronized int match(Object namespace, int[] tokens, int limit) {
        int end = Math.max(0, Math.min(limit, tokens.length));
        Node node = roots.get(namespace);
        int pos = 0;
        while (node != null && pos < end) {
            Node child = node.children.get(tokens[pos]);
            if (child == null) {
                break;
            }
            int common = commonPrefix(child.key, tokens, pos, end);
            touch(child);
            pos += common;
            node = common == child.key.length ? child : null;
        }
        return pos;
    }

    /**
     * Inserts {@code tokens} under {@code namespace} (as much of them as fits) and returns how many
     * of its leading tokens the cache now holds.
     */
    synchronized int insert(Object namespace, int[] tokens) {
        return depth(insertPath(namespace, tokens));
    }

    /** Drops every cached prefix of every namespace; leases taken before release without inserting. */
    synchronized void flush() {
        roots.clear();
        evictable.clear();
        cachedTokens = 0;
        lockedTokens = 0;
        epoch++;
        flushes++;
    }

    synchronized PrefixCacheStats stats() {
        return new PrefixCacheStats(
                capacity, cachedTokens, lockedTokens, promptTokens, hitTokens, evictedTokens, flushes);
    }

    // ---------------------------------------------------------------- the trie

    /**
     * Walks {@code tokens} down the trie, splitting the edge where they leave it or end inside it,
     * and hangs what is left (as much as fits) below: returns the node at the end of the cached
     * part, whose path is a prefix of {@code tokens}.
     */
    private Node insertPath(Object namespace, int[] tokens) {
        if (capacity == 0 || tokens.length == 0) {
            return null;
        }
        Node node = roots.computeIfAbsent(namespace, ns -> new Node(++nodeIds, null, NO_TOKENS));
        int pos = 0;
        while (pos < tokens.length) {
            Node child = node.children.get(tokens[pos]);
            if (child == null) {
                break;
            }
            int common = commonPrefix(child.key, tokens, pos, tokens.length);
            if (common < child.key.length) {
                child = split(child, common);
            }
            touch(child);
            node = child;
            pos += common;
        }
        int missing = tokens.length - pos;
        if (missing > 0) {
            // The matched path must survive the eviction that makes room below it.
            lock(node, 1);
            evict(missing - (capacity - cachedTokens));
            lock(node, -1);
            int fits = (int) Math.min(missing, capacity - cachedTokens);
            if (fits > 0) {
                Node leaf = new Node(++nodeIds, node, Arrays.copyOfRange(tokens, pos, pos + fits));
                node.children.put(leaf.key[0], leaf);
                cachedTokens += fits;
                refreshEvictable(node);
                touch(leaf);
                refreshEvictable(leaf);
                node = leaf;
            }
            // Eviction may have emptied tries (this one too, when nothing fitted).
            roots.values().removeIf(root -> root.children.isEmpty());
        }
        return node;
    }

    /** Cuts {@code child}'s edge after {@code at} tokens; returns the new node holding the first part. */
    private Node split(Node child, int at) {
        Node upper = new Node(++nodeIds, child.parent, Arrays.copyOf(child.key, at));
        upper.lockRef = child.lockRef; // every lock through the child passes through its new upper part
        upper.lastAccess = child.lastAccess;
        child.parent.children.put(upper.key[0], upper);
        child.key = Arrays.copyOfRange(child.key, at, child.key.length);
        child.parent = upper;
        upper.children.put(child.key[0], child);
        return upper;
    }

    /** Evicts least recently used unlocked leaves until {@code tokens} tokens are freed or none is left. */
    private void evict(long tokens) {
        long freed = 0;
        while (freed < tokens && !evictable.isEmpty()) {
            Node leaf = evictable.pollFirst();
            leaf.evictable = false;
            Node parent = leaf.parent;
            parent.children.remove(leaf.key[0]);
            freed += leaf.key.length;
            cachedTokens -= leaf.key.length;
            evictedTokens += leaf.key.length;
            refreshEvictable(parent);
        }
    }

    /** Adds {@code delta} to the lock count of every node from {@code node} up to its root. */
    private void lock(Node node, int delta) {
        for (Node n = node; n != null && n.parent != null; n = n.parent) {
            boolean wasLocked = n.lockRef > 0;
            n.lockRef += delta;
            if (n.lockRef < 0) {
                throw new IllegalStateException("prefix cache lock count below zero");
            }
            if (wasLocked != n.lockRef > 0) {
                lockedTokens += wasLocked ? -n.key.length : n.key.length;
            }
            refreshEvictable(n);
        }
    }

    private void touch(Node n) {
        boolean listed = n.evictable;
        if (listed) {
            evictable.remove(n);
        }
        n.lastAccess = ++clock;
        if (listed) {
            evictable.add(n);
        }
    }

    private void refreshEvictable(Node n) {
        boolean should = n.parent != null && n.children.isEmpty() && n.lockRef == 0;
        if (should != n.evictable) {
            if (should) {
                n.evictable = true;
                evictable.add(n);
            } else {
                evictable.remove(n);
                n.evictable = false;
            }
        }
    }

    private static int depth(Node n) {
        int d = 0;
        for (; n != null; n = n.parent) {
            d += n.key.length;
        }
        return d;
    }

    /** How many of {@code key}'s tokens equal {@code tokens[from, to)} from its start. */
    private static int commonPrefix(int[] key, int[] tokens, int from, int to) {
        int n = Math.min(key.length, to - from);
        int i = 0;
        while (i < n && key[i] == tokens[from + i]) {
            i++;
        }
        return i;
    }
}
