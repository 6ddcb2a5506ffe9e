--[[
  createRun-3: store a new run (header, initial messages and evidence) unless it already exists.
  Idempotent: a start job delivered twice creates the run once. The header layout is in keys.ts.

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence
  ARGV[1] nonce of this call (a resend of the same call after a lost reply still reports "created")
  ARGV[2] run state version   ARGV[3] store layout
  ARGV[4] fixed part JSON (field `state`, written once: requester, question, limits)
  ARGV[5] changing part JSON (field `progress`)   ARGV[6] Slack context JSON
  ARGV[7] status   ARGV[8] step   ARGV[9] stopReason ('' for none)
  ARGV[10] createdAt (ms)   ARGV[11] updatedAt (ms)
  ARGV[12] pause: approval ids of the pending gated calls, space-separated ('' for none)
  ARGV[13] lifetime ms: TTL of an unfinished run's keys, 0 for none
  ARGV[14] number of messages m, ARGV[15 .. 14+m] message rows, the rest evidence rows

  Returns 1 when this call created the run, 0 when it already existed.
]]
local header, messages, evidence = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', header) == 1 then
  if redis.call('HGET', header, 'createNonce') == ARGV[1] then return 1 end
  return 0
end
local m = tonumber(ARGV[14])
local e = #ARGV - 14 - m
-- Leftovers of an older run of the same id (its header expired first) must not join this history. Its
-- compactions and kept results share the run's hash tag: their keys are the header's with another name.
local base = string.sub(header, 1, #header - #'header')
redis.call('DEL', messages, evidence, base .. 'compactions', base .. 'results')
redis.call('HSET', header,
  'v', ARGV[2], 'layout', ARGV[3], 'state', ARGV[4], 'progress', ARGV[5], 'slack', ARGV[6],
  'status', ARGV[7], 'step', ARGV[8], 'stopReason', ARGV[9],
  'createdAt', ARGV[10], 'updatedAt', ARGV[11], 'pause', ARGV[12],
  'messages', m, 'evidence', e, 'fence', 0, 'createNonce', ARGV[1])
if m > 0 then redis.call('RPUSH', messages, unpack(ARGV, 15, 14 + m)) end
if e > 0 then redis.call('RPUSH', evidence, unpack(ARGV, 15 + m, #ARGV)) end
local lifetime = tonumber(ARGV[13])
if lifetime > 0 then
  redis.call('PEXPIRE', header, lifetime)
  redis.call('PEXPIRE', messages, lifetime)
  redis.call('PEXPIRE', evidence, lifetime)
end
return 1
