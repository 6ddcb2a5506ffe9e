import { Redis } from 'ioredis';
import { createStore } from '/work/main/src/store/index.js';
const redis = new Redis('redis://127.0.0.1:6399');
const store = createStore(redis, { prefix: '{lgtmp}' });
const T0 = Date.now();
const msgs: any[] = [{ role: 'system', content: 'sys prompt here for the run' }, { role: 'user', content: 'question?' }];
const ev: any[] = [];
for (let i = 1; i <= 50; i++) {
  msgs.push({ role: 'assistant', content: `Step ${i}: checking the next metric.`, toolCalls: [{ id: `call_${i}`, name: 'prometheus_query', arguments: `{"query":"up{job=\\"svc-${i}\\"}"}` }] });
  msgs.push({ role: 'tool', toolCallId: `call_${i}`, name: 'prometheus_query', content: `{"ok":true,"data":{"resultType":"vector","result":[{"metric":{"job":"svc-${i}","instance":"10.0.0.${i % 250}:9100"},"value":[1767000000,"1"]}]}}` });
  ev.push({ toolCallId: `call_${i}`, tool: 'prometheus_query', kind: 'result', ok: true, summary: `svc-${i} up`, at: T0 + i });
}
const { realisticState } = await import('/work/main/test/store/run-state-fixture.js');
const s = { ...realisticState('bd1'), status: 'running', turn: null, messages: msgs, evidence: ev };
await redis.del(...(await redis.keys('lgtmp:*')).concat(['x']));
await store.runs.createRun(s as any, { teamId: 'T', channelId: 'C', threadTs: '1.1', requestMessageTs: '1.1' });
const k = store.context.keys.run('bd1');
for (const key of [k.header, k.messages, k.evidence]) console.log(key, await redis.memory('USAGE', key, 'SAMPLES', 0), await redis.object('ENCODING', key));
console.log('msg json', JSON.stringify(msgs).length, 'ev json', JSON.stringify(ev).length);
const h = await redis.hgetall(k.header); console.log('header field bytes', Object.entries(h).reduce((a,[f,v])=>a+f.length+v.length,0));
// timing
for (let i=0;i<300;i++) await store.runs.loadRun('bd1');
const N=2000; let tl=0, tp=0;
const { z } = await import('zod');
const { messageSchema, evidenceSchema, runHeaderStateSchema } = await import('/work/main/src/store/run-state-schema.js');
for (let i=0;i<N;i++){ const t0=performance.now(); await store.context.script('loadRun',[k.header,k.messages,k.evidence],[]); tl+=performance.now()-t0; }
const raw:any = await store.context.script('loadRun',[k.header,k.messages,k.evidence],[]);
for (let i=0;i<N;i++){ const t0=performance.now(); z.array(messageSchema).parse(JSON.parse(raw[1])); z.array(evidenceSchema).parse(JSON.parse(raw[2])); tp+=performance.now()-t0; }
let tn=0; for (let i=0;i<N;i++){ const t0=performance.now(); JSON.parse(raw[1]); JSON.parse(raw[2]); tn+=performance.now()-t0; }
let tf=0; for (let i=0;i<N;i++){ const t0=performance.now(); await store.runs.loadRun('bd1'); tf+=performance.now()-t0; }
let tping=0; for (let i=0;i<N;i++){ const t0=performance.now(); await redis.ping(); tping+=performance.now()-t0; }
let tm=0; for (let i=0;i<N;i++){ const t0=performance.now(); const r = await redis.multi().hgetall(k.header).lrange(k.messages,0,-1).lrange(k.evidence,0,-1).exec(); const m = r![1]![1] as string[]; JSON.parse('['+m.join(',')+']'); tm+=performance.now()-t0; }
let tp2=0; for (let i=0;i<N;i++){ const t0=performance.now(); const r = await redis.pipeline().hgetall(k.header).lrange(k.messages,0,-1).lrange(k.evidence,0,-1).exec(); tp2+=performance.now()-t0; }
let tb=0; for (let i=0;i<N;i++){ const t0=performance.now(); const r = await redis.multi().hgetall(k.header).lrangeBuffer(k.messages,0,-1).lrangeBuffer(k.evidence,0,-1).exec(); const m = r![1]![1] as Buffer[]; const joined = Buffer.concat([Buffer.from('['), ...m.flatMap((b,i)=> i? [Buffer.from(','), b]:[b]), Buffer.from(']')]); JSON.parse(joined.toString()); tb+=performance.now()-t0; }
console.log({ multi: tm/N, pipeline: tp2/N, multiBuffer: tb/N });
console.log({ script: tl/N, parseValidate: tp/N, parseOnly: tn/N, full: tf/N, ping: tping/N });
await redis.del(...(await redis.keys('lgtmp:*')));
await redis.quit();
