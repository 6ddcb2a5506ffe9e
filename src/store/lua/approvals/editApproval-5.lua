--[[
  editApproval-5: an approver edited a pending call's arguments. The edited arguments become the next
  round of the approval (a new record with their own hash, what the policy's rules ask for them, and,
  when those rules let the editor approve them, the editor's approval), and the edited round replaces the
  old one, which becomes `superseded` and points at it (`editedTo`). The card stays where it is. A round
  created already `approved` opens its execution ledger entry, as a click's approval would. The first edit
  wins: once the next round exists, other edits of the old one change nothing.

  KEYS[1] approval of round n   KEYS[2] approval of round n+1   KEYS[3] ledger of round n+1
  KEYS[4] the run's header      KEYS[5] the run's approvals set
  ARGV[1] editor   ARGV[2] now (ms)   ARGV[3] nonce of this call   ARGV[4] approval id of round n+1
  ARGV[5] reason recorded on round n   ARGV[6] number k of field/value items of round n+1, then k items

  Returns {1, field, value, ...} with round n+1 as stored (also for a resend of this call); or -1
  (not_found: no round n), -12 (not_pending: round n was decided or edited), -9 (run_ended), -10 (edited_already:
  another edit made round n+1), -11 (expired: round n's time is up).
]]
-- @include follow-header-ttl
local old, new, ledger, header, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local function reply()
  local result = {1}
  for _, item in ipairs(redis.call('HGETALL', new)) do result[#result + 1] = item end
  return result
end
local current = redis.call('HMGET', old, 'status', 'expiresAt', 'cardChannel', 'cardTs')
if not current[1] then return -1 end
if redis.call('EXISTS', new) == 1 then
  if redis.call('HGET', new, 'editNonce') == ARGV[3] then return reply() end
  return -10
end
if current[1] ~= 'pending' then return -12 end
local ENDED = {completed = true, failed = true, stopped = true, cancelled = true}
if ENDED[redis.call('HGET', header, 'status')] then return -9 end
if tonumber(ARGV[2]) >= tonumber(current[2]) then return -11 end
local k = tonumber(ARGV[6])
redis.call('HSET', new, unpack(ARGV, 7, 6 + k))
redis.call('HSET', new, 'editNonce', ARGV[3])
if current[3] and current[4] then redis.call('HSET', new, 'cardChannel', current[3], 'cardTs', current[4]) end
redis.call('SADD', set, ARGV[4])
followHeaderTtl(old, new)
redis.call('HSET', old, 'status', 'superseded', 'decidedBy', ARGV[1], 'decidedAt', ARGV[2],
  'decisionReason', ARGV[5], 'decisionNonce', ARGV[3], 'editedTo', ARGV[4])
if redis.call('HGET', new, 'status') == 'approved' then
  redis.call('HSET', ledger, 'status', 'approved', 'attempts', 0, 'approvedAt', ARGV[2],
    'argsHash', redis.call('HGET', new, 'argsHash'))
  followHeaderTtl(old, ledger)
end
return reply()
