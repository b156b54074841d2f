/**
 * The trainer gateway's wire formats, shared by the gateway (which writes them) and {@link
 * org.rollout.trainer.RolloutClient#connect the HTTP client} (which reads them): the RBATCH batch
 * stream ({@link org.rollout.trainer.wire.BatchWireFormat}) and the JSON bodies ({@link
 * org.rollout.trainer.wire.GatewayJson}). Both are specified in docs/protocol.md so that trainers in
 * other languages can speak them.
 */
package org.rollout.trainer.wire;
