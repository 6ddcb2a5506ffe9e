--[[
  askAgainForPlan-5: an approved call's plan changed before it ran (the worker's plan check stopped it),
  so it is asked again: round n+1 (built by the caller: the same call and askers, the new plan, no
  decision and no votes) becomes the approval's next round, and round n becomes `superseded`, pointing
  at it (`editedTo`); its decider and time stay. The card stays where it is. Only an approved round
  whose ledger entry never began can be asked again. A resend finds round n+1 and returns it.

  KEYS[1] approval of round n   KEYS[2] approval of round n+1   KEYS[3] ledger of round n
  KEYS[4] the run's header      KEYS[5] the run's approvals set
  ARGV[1] approval id of round n+1   ARGV[2] reason recorded on round n
  ARGV[3] number k of field/value items of round n+1, then k items

  Returns {1, field, value, ...} with round n+1 as stored; or -1 (not_found: no round n), -6
  (not_approved: round n is not approved, or its execution began), -9 (run_ended).
]]
-- @include follow-header-ttl
local old, new, ledger, header, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local function reply()
  local result = {1}
  for _, item in ipairs(redis.call('HGETALL', new)) do result[#result + 1] = item end
  return result
end
local current = redis.call('HMGET', old, 'status', 'cardChannel', 'cardTs')
if not current[1] then return -1 end
if redis.call('EXISTS', new) == 1 and current[1] == 'superseded' then return reply() end
if current[1] ~= 'approved' then return -6 end
local began = redis.call('HGET', ledger, 'status')
if began ~= 'approved' and began ~= 'not_started' and began ~= 'plan_blocked' then return -6 end
local ENDED = {completed = true, failed = true, stopped = true, cancelled = true}
if ENDED[redis.call('HGET', header, 'status')] then return -9 end
local k = tonumber(ARGV[3])
redis.call('DEL', new)
redis.call('HSET', new, unpack(ARGV, 4, 3 + k))
if current[2] and current[3] then redis.call('HSET', new, 'cardChannel', current[2], 'cardTs', current[3]) end
redis.call('SADD', set, ARGV[1])
followHeaderTtl(old, new)
redis.call('HSET', old, 'status', 'superseded', 'decisionReason', ARGV[2], 'editedTo', ARGV[1])
return reply()
