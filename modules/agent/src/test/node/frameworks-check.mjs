// Drives the rollout proxy with agent frameworks' own SDKs: the Vercel AI SDK (ai with @ai-sdk/openai
// and @ai-sdk/anthropic), LangChain's ChatOpenAI (@langchain/openai) and the OpenAI Agents SDK
// (@openai/agents). Run by NodeSdkTest.
// ROLLOUT_SCENARIO=scripted (default): the proxy runs on a scripted engine whose replies are queued in
// the order of the steps below (a forced call's reply is what follows the call's opening).
// ROLLOUT_SCENARIO=builtin: the built-in model answers whatever it samples; only the shapes are checked.
// Env: ROLLOUT_BASE_URL (the session's .../v1 URL), ROLLOUT_API_KEY.
// Prints one line "ok <step> <ids>" per passed step; the first failure exits non-zero with its reason.
import assert from 'node:assert/strict';
import { generateText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';
import OpenAI from 'openai';
import { Agent, run, tool as agentTool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';

const baseURL = process.env.ROLLOUT_BASE_URL;
const apiKey = process.env.ROLLOUT_API_KEY;
const scenario = process.env.ROLLOUT_SCENARIO ?? 'scripted';

// Every request body the AI SDK sends, to check what went over the wire.
const sent = [];
const recordingFetch = async (url, init) => {
  sent.push({ url: String(url), body: init?.body ? JSON.parse(init.body) : null });
  return fetch(url, init);
};
const aiOpenAI = createOpenAI({ baseURL, apiKey, fetch: recordingFetch });
// The AI SDK's Anthropic provider appends /messages to a base URL that includes /v1 ...
const aiAnthropic = createAnthropic({ baseURL, apiKey, fetch: recordingFetch });
// ... and a base URL without /v1 (as Anthropic's own SDK takes it) is served as well.
const aiAnthropicNoV1 = createAnthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey, fetch: recordingFetch });

const addInput = z.object({ a: z.number().int(), b: z.number().int() });
const aiAdd = tool({ description: 'Adds two integers.', inputSchema: addInput });
const lcAdd = {
  type: 'function',
  function: {
    name: 'add',
    description: 'Adds two integers.',
    parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } },
  },
};

// The Agents SDK talks to the proxy through this client and exports no traces.
setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 }));
setOpenAIAPI('responses');
const agentAdd = agentTool({
  name: 'add',
  description: 'Adds two integers.',
  parameters: addInput,
  execute: async ({ a, b }) => String(a + b),
});

const lastBody = () => sent[sent.length - 1].body;
const responseId = (r) => r.response.id;

async function aiSdkTwoTurns(maxOutputTokens) {
  const messages = [{ role: 'user', content: 'Say hello.' }];
  const first = await generateText({ model: aiOpenAI('rollout'), messages, maxRetries: 0, maxOutputTokens });
  messages.push(...first.response.messages);
  messages.push({ role: 'user', content: 'And how are you?' });
  const second = await generateText({ model: aiOpenAI('rollout'), messages, maxRetries: 0, maxOutputTokens });
  // The earlier answer went back as references to its output items, not as its text: its message
  // when it had text, and its reasoning item when the model reasoned (the built-in model may).
  const input = JSON.stringify(lastBody().input);
  const refs = lastBody().input.filter((i) => i.type === 'item_reference');
  const firstItems = (first.response.body?.output ?? []).map((i) => i.id);
  refs.forEach((r) => assert.ok(firstItems.includes(r.id), `${r.id} is not an output item of ${firstItems}: ${input}`));
  const messageRefs = refs.filter((r) => r.id.startsWith('msg_'));
  assert.equal(messageRefs.length, first.text === '' ? 0 : 1, input);
  refs.forEach((r) => assert.ok(r.id.startsWith('msg_') || r.id.startsWith('rs_'), r.id));
  return [first, second];
}

async function langChainTwoTurns(maxTokens) {
  const model = new ChatOpenAI({ model: 'rollout', apiKey, configuration: { baseURL }, maxRetries: 0, maxTokens });
  const history = [new HumanMessage('Say hello.')];
  const first = await model.invoke(history);
  history.push(first, new HumanMessage('And how are you?'));
  const second = await model.invoke(history);
  return [first, second];
}

const steps = [
  ['ai-sdk responses two turns with item references', async () => {
    const [first, second] = await aiSdkTwoTurns();
    assert.equal(first.text, 'Hello there.');
    // (The reasoning's text is in the item's content, as vLLM serves it; the AI SDK reads summaries.)
    const refs = lastBody().input.filter((i) => i.type === 'item_reference').map((r) => r.id.split('_')[0]);
    assert.deepEqual(refs, ['rs', 'msg'], JSON.stringify(lastBody().input));
    assert.equal(second.text, 'Fine, thanks.');
    return `${responseId(first)} ${responseId(second)}`;
  }],
  ['ai-sdk responses forced named tool', async () => {
    const r = await generateText({
      model: aiOpenAI('rollout'),
      prompt: 'What is 2+3?',
      tools: { add: aiAdd },
      toolChoice: { type: 'tool', toolName: 'add' },
      maxRetries: 0,
    });
    assert.deepEqual(lastBody().tool_choice, { type: 'function', name: 'add' });
    assert.equal(r.toolCalls.length, 1);
    assert.equal(r.toolCalls[0].toolName, 'add');
    assert.deepEqual(r.toolCalls[0].input, { a: 2, b: 3 });
    return responseId(r);
  }],
  ['ai-sdk chat completions forced required tool', async () => {
    const r = await generateText({
      model: aiOpenAI.chat('rollout'),
      prompt: 'What is 2+3?',
      tools: { add: aiAdd },
      toolChoice: 'required',
      maxRetries: 0,
    });
    assert.equal(lastBody().tool_choice, 'required');
    assert.equal(r.toolCalls[0].toolName, 'add');
    assert.deepEqual(r.toolCalls[0].input, { a: 2, b: 3 });
    assert.equal(r.finishReason, 'tool-calls');
    return responseId(r);
  }],
  ['ai-sdk anthropic plain', async () => {
    const r = await generateText({
      model: aiAnthropic('rollout'), prompt: 'Say hello in French.', maxOutputTokens: 64, maxRetries: 0,
    });
    assert.ok(sent[sent.length - 1].url.endsWith('/v1/messages'), sent[sent.length - 1].url);
    assert.equal(r.text, 'Bonjour.');
    return responseId(r);
  }],
  ['ai-sdk anthropic forced tool without /v1', async () => {
    const r = await generateText({
      model: aiAnthropicNoV1('rollout'),
      prompt: 'What is 2+3?',
      tools: { add: aiAdd },
      toolChoice: 'required',
      maxOutputTokens: 64,
      maxRetries: 0,
    });
    const last = sent[sent.length - 1];
    assert.ok(last.url.endsWith('/messages') && !last.url.endsWith('/v1/messages'), last.url);
    assert.equal(last.body.tool_choice.type, 'any');
    assert.equal(r.toolCalls[0].toolName, 'add');
    assert.deepEqual(r.toolCalls[0].input, { a: 2, b: 3 });
    return responseId(r);
  }],
  ['langchain chat two turns', async () => {
    const [first, second] = await langChainTwoTurns();
    assert.equal(first.content, 'Hello there.');
    assert.equal(second.content, 'Fine, thanks.');
    return `${first.id} ${second.id}`;
  }],
  ['langchain forced named tool', async () => {
    const model = new ChatOpenAI({ model: 'rollout', apiKey, configuration: { baseURL }, maxRetries: 0 });
    const m = await model.bindTools([lcAdd], { tool_choice: 'add' }).invoke([new HumanMessage('What is 2+3?')]);
    assert.equal(m.tool_calls.length, 1);
    assert.equal(m.tool_calls[0].name, 'add');
    assert.deepEqual(m.tool_calls[0].args, { a: 2, b: 3 });
    return m.id;
  }],
  ['agents run with a forced tool', async () => {
    const agent = new Agent({
      name: 'Calculator',
      instructions: 'Use the add tool for arithmetic.',
      model: 'rollout',
      tools: [agentAdd],
      modelSettings: { toolChoice: 'required' },
    });
    const result = await run(agent, 'What is 2+3?', { maxTurns: 4 });
    assert.equal(result.finalOutput, 'It is 5.');
    const outputs = result.newItems.filter((i) => i.type === 'tool_call_output_item');
    assert.equal(outputs.length, 1);
    assert.equal(outputs[0].output, '5');
    return result.rawResponses.map((r) => r.responseId).join(' ');
  }],
];

const builtinSteps = [
  ['ai-sdk responses two turns with item references', async () => {
    const [first, second] = await aiSdkTwoTurns(16);
    assert.equal(typeof second.text, 'string');
    return `${responseId(first)} ${responseId(second)}`;
  }],
  ['langchain chat two turns', async () => {
    const [first, second] = await langChainTwoTurns(16);
    assert.equal(typeof second.content, 'string');
    return `${first.id} ${second.id}`;
  }],
  ['agents run with a tool', async () => {
    const agent = new Agent({
      name: 'Calculator',
      instructions: 'Use the add tool for arithmetic.',
      model: 'rollout',
      tools: [agentAdd],
      modelSettings: { maxTokens: 16 },
    });
    const result = await run(agent, 'What is 2+3?', { maxTurns: 4 });
    assert.equal(typeof result.finalOutput, 'string');
    return result.rawResponses.map((r) => r.responseId).join(' ');
  }],
];

for (const [name, step] of scenario === 'builtin' ? builtinSteps : steps) {
  try {
    const ids = await step();
    console.log(`ok ${name}${ids ? ' ' + ids : ''}`);
  } catch (e) {
    console.log(`FAILED ${name}: ${e?.stack ?? e}`);
    process.exit(1);
  }
}
