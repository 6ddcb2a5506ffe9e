--[[
  createRun-3: store a new run (header, initial messages and evidence) unless it already exists.
  Idempotent: a start job delivered twice creates the run once.

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence
  ARGV[1] nonce of this call (a resend of the same call after a lost reply still reports "created")
  ARGV[2] run state version
  ARGV[3] header state JSON (the RunState without messages and evidence)
  ARGV[4] Slack context JSON
  ARGV[5] status   ARGV[6] step   ARGV[7] stopReason ('' for none)
  ARGV[8] createdAt (ms)   ARGV[9] updatedAt (ms)
  ARGV[10] lifetime ms: TTL of an unfinished run's keys, 0 for none
  ARGV[11] number of messages m, ARGV[12 .. 11+m] messages JSON, the rest evidence JSON

  Returns 1 when this call created the run, 0 when it already existed.
]]
local header, messages, evidence = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', header) == 1 then
  if redis.call('HGET', header, 'createNonce') == ARGV[1] then return 1 end
  return 0
end
local m = tonumber(ARGV[11])
local e = #ARGV - 11 - m
-- Leftovers of an older run of the same id (its header expired first) must not join this history.
redis.call('DEL', messages, evidence)
redis.call('HSET', header,
  'v', ARGV[2], 'state', ARGV[3], 'slack', ARGV[4],
  'status', ARGV[5], 'step', ARGV[6], 'stopReason', ARGV[7],
  'createdAt', ARGV[8], 'updatedAt', ARGV[9],
  'messages', m, 'evidence', e, 'fence', 0, 'createNonce', ARGV[1])
if m > 0 then redis.call('RPUSH', messages, unpack(ARGV, 12, 11 + m)) end
if e > 0 then redis.call('RPUSH', evidence, unpack(ARGV, 12 + m, #ARGV)) end
local lifetime = tonumber(ARGV[10])
if lifetime > 0 then
  redis.call('PEXPIRE', header, lifetime)
  redis.call('PEXPIRE', messages, lifetime)
  redis.call('PEXPIRE', evidence, lifetime)
end
return 1
