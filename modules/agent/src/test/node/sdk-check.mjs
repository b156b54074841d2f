// Drives the rollout proxy with the official OpenAI and Anthropic Node SDKs.
// Run by NodeSdkTest. ROLLOUT_SCENARIO=scripted (default): the proxy runs on a scripted engine whose
// replies are queued in the order of the steps below. ROLLOUT_SCENARIO=builtin: the built-in model
// answers (whatever it samples), plain and streamed, in both APIs.
// Env: ROLLOUT_BASE_URL (the session's .../v1 URL), ROLLOUT_API_KEY.
// Prints one line "ok <step>" per passed step; the first failure exits non-zero with its reason.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.ROLLOUT_BASE_URL;
const apiKey = process.env.ROLLOUT_API_KEY;
const openai = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
// Anthropic's client appends /v1/messages to its base URL itself.
const anthropic = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey, maxRetries: 0, timeout: 60_000 });

const addTool = {
  type: 'function',
  name: 'add',
  description: 'Adds two integers.',
  parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } },
  strict: false,
};
const addToolAnthropic = {
  name: 'add',
  description: 'Adds two integers.',
  input_schema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } },
};

const steps = [
  ['responses plain', async () => {
    const r = await openai.responses.create({ model: 'rollout', instructions: 'Be brief.', input: 'Say hello.' });
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, 'Hello there.');
    assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    return r.id;
  }],
  ['responses streaming', async () => {
    const stream = await openai.responses.create({ model: 'rollout', input: 'Stream.', stream: true });
    let text = '';
    let completed = null;
    const types = [];
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') completed = e.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(text, 'Streamed words here.');
    assert.equal(completed.output_text ?? completed.output[0].content[0].text, text);
    return completed.id;
  }],
  ['responses tool round trip', async () => {
    const first = await openai.responses.create({ model: 'rollout', input: 'What is 2+3?', tools: [addTool] });
    const call = first.output.find((i) => i.type === 'function_call');
    assert.equal(call.name, 'add');
    assert.deepEqual(JSON.parse(call.arguments), { a: 2, b: 3 });
    const second = await openai.responses.create({
      model: 'rollout',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '5' }],
      tools: [addTool],
    });
    assert.equal(second.output_text, 'It is 5.');
    return `${first.id} ${second.id}`;
  }],
  ['responses streamed tool call', async () => {
    const stream = openai.responses.stream({ model: 'rollout', input: 'What is 2+3?', tools: [addTool] });
    let args = null;
    for await (const e of stream) {
      if (e.type === 'response.function_call_arguments.done') args = e.arguments;
    }
    const final = await stream.finalResponse();
    assert.deepEqual(JSON.parse(args), { a: 2, b: 3 });
    assert.equal(final.output.find((i) => i.type === 'function_call').name, 'add');
    return final.id;
  }],
  ['messages plain', async () => {
    const m = await anthropic.messages.create({
      model: 'rollout',
      max_tokens: 64,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Say hello in French.' }],
    });
    assert.equal(m.type, 'message');
    assert.equal(m.stop_reason, 'end_turn');
    assert.deepEqual(m.content, [{ type: 'text', text: 'Bonjour.' }]);
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
    return m.id;
  }],
  ['messages streaming', async () => {
    const stream = anthropic.messages.stream({
      model: 'rollout',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Stream.' }],
    });
    let text = '';
    stream.on('text', (t) => { text += t; });
    const m = await stream.finalMessage();
    assert.equal(text, 'Streaming from messages.');
    assert.equal(m.content[0].text, text);
    assert.equal(m.stop_reason, 'end_turn');
    return m.id;
  }],
  ['messages tool round trip', async () => {
    const messages = [{ role: 'user', content: 'What is 2+3?' }];
    const first = await anthropic.messages.create({ model: 'rollout', max_tokens: 64, tools: [addToolAnthropic], messages });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'add');
    assert.deepEqual(use.input, { a: 2, b: 3 });
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '5' }] });
    const second = await anthropic.messages.create({ model: 'rollout', max_tokens: 64, tools: [addToolAnthropic], messages });
    assert.equal(second.content[0].text, 'It is 5.');
    return `${first.id} ${second.id}`;
  }],
  ['messages streamed tool call', async () => {
    const stream = anthropic.messages.stream({
      model: 'rollout',
      max_tokens: 64,
      tools: [addToolAnthropic],
      messages: [{ role: 'user', content: 'What is 2+3?' }],
    });
    const m = await stream.finalMessage();
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.content.find((b) => b.type === 'tool_use').input, { a: 2, b: 3 });
    return m.id;
  }],
  ['responses streamed reasoning', async () => {
    const stream = openai.responses.stream({ model: 'rollout', input: 'What is 2+3? Think first.' });
    let thought = '';
    stream.on('response.reasoning_text.delta', (e) => { thought += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(thought, 'Two plus three.');
    assert.equal(final.output[0].type, 'reasoning');
    assert.deepEqual(final.output[0].content, [{ type: 'reasoning_text', text: 'Two plus three.' }]);
    assert.equal(final.output_text, 'It is 5.');
    return final.id;
  }],
  ['messages streamed thinking', async () => {
    const stream = anthropic.messages.stream({
      model: 'rollout',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'What is 2+3? Think first.' }],
    });
    let thought = '';
    stream.on('thinking', (delta) => { thought += delta; });
    const m = await stream.finalMessage();
    assert.equal(thought, 'Two plus three.');
    assert.deepEqual(m.content, [
      { type: 'thinking', thinking: 'Two plus three.', signature: '' },
      { type: 'text', text: 'It is 5.' },
    ]);
    return m.id;
  }],
  ['messages bad request', async () => {
    await assert.rejects(
      anthropic.messages.create({ model: 'rollout', messages: [{ role: 'user', content: 'No max_tokens.' }] }),
      (e) => e instanceof Anthropic.BadRequestError && e.status === 400
        && e.error.type === 'error' && e.error.error.type === 'invalid_request_error',
    );
    return '';
  }],
  ['responses bad request', async () => {
    await assert.rejects(
      openai.responses.create({ model: 'rollout', input: 'Hi', previous_response_id: 'resp_unknown' }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'previous_response_id',
    );
    return '';
  }],
];

const builtinSteps = [
  ['responses plain', async () => {
    const r = await openai.responses.create({ model: 'rollout', input: 'Say hello.', max_output_tokens: 16 });
    assert.ok(r.status === 'completed' || r.status === 'incomplete');
    assert.equal(typeof r.output_text, 'string');
    assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 16);
    return `${r.id} ${r.usage.output_tokens}`;
  }],
  ['responses streaming', async () => {
    const stream = openai.responses.stream({ model: 'rollout', input: 'Stream.', max_output_tokens: 16 });
    let text = '';
    stream.on('response.output_text.delta', (e) => { text += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, text);
    return `${final.id} ${final.usage.output_tokens}`;
  }],
  ['messages plain', async () => {
    const m = await anthropic.messages.create({
      model: 'rollout', max_tokens: 16, messages: [{ role: 'user', content: 'Say hello.' }],
    });
    assert.ok(m.stop_reason === 'end_turn' || m.stop_reason === 'max_tokens');
    return `${m.id} ${m.usage.output_tokens}`;
  }],
  ['messages streaming', async () => {
    const stream = anthropic.messages.stream({
      model: 'rollout', max_tokens: 16, messages: [{ role: 'user', content: 'Stream.' }],
    });
    let text = '';
    stream.on('text', (t) => { text += t; });
    const m = await stream.finalMessage();
    assert.equal(m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), text);
    return `${m.id} ${m.usage.output_tokens}`;
  }],
];

const scenario = process.env.ROLLOUT_SCENARIO ?? 'scripted';
for (const [name, run] of scenario === 'builtin' ? builtinSteps : steps) {
  try {
    const ids = await run();
    console.log(`ok ${name}${ids ? ' ' + ids : ''}`);
  } catch (e) {
    console.log(`FAILED ${name}: ${e?.stack ?? e}`);
    process.exit(1);
  }
}
