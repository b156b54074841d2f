package org.rollout.agent;

import java.util.Map;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;

/**
 * One generated assistant turn, already recorded ({@link TurnGenerator#turn}); each API shapes its
 * answer from it.
 *
 * @param id the completion's id (chatcmpl-…, resp_…, msg_…), also the interaction's
 * @param resp the engine's answer, its stop reason TOOL_CALLS when tool calls were parsed
 * @param answerTokens the output tokens without trailing stop ids (what the answer's text decodes)
 * @param reasoning the thinking block's text, or null when the model wrote none
 * @param parsed the answer after the thinking block: content and tool calls
 * @param message the recorded OpenAI assistant message
 * @param stopSequence the request's stop string that ended the answer, or null
 */
record Turn(
        String id,
        ModelResponse resp,
        int[] answerTokens,
        String reasoning,
        ToolCallParser.Parsed parsed,
        StopReason stop,
        Map<String, Object> message,
        String stopSequence) {}
