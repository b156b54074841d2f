package org.rollout.trainer;

/**
 * A batch handed out and not yet acknowledged, as the status shows it: who holds it and when it
 * goes back to the next pull if it is not acknowledged.
 *
 * @param batchId the batch
 * @param groups its groups
 * @param holder the trainer holding it: the lease's holder, or the puller's address when it was
 *     pulled without a lease
 * @param leased whether it was pulled under a lease (else only {@code batch_ack_timeout} returns it)
 * @param returnsInMillis milliseconds until it goes back unless acknowledged or (leased) renewed;
 *     0 when it is due now
 */
public record HeldBatch(long batchId, int groups, String holder, boolean leased, long returnsInMillis) {}
