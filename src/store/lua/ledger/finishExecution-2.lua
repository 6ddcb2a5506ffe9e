--[[
  finishExecution-2: compare-and-set a ledger entry `executing -> succeeded | failed | outcome_unknown`
  with its result, if the caller holds the run's lease. `outcome_unknown` is what crash recovery
  records for an entry it finds still `executing`; `not_started` undoes the caller's own `executing`
  when a replica did not confirm it, before anything ran.

  KEYS[1] ledger   KEYS[2] lease
  ARGV[1] fence   ARGV[2] outcome: succeeded | failed | outcome_unknown | not_started
  ARGV[3] result JSON ('' for none)   ARGV[4] now (ms)
  ARGV[5] nonce of this call (a resend after a lost reply is recognised as the call that finished it)

  Returns {changed (0|1), field, value, ...} (0: the entry was not `executing`; it is returned as it
  is), or -2 (lease_lost), -3 (stale_fence), -6 (not_approved: there is no ledger entry).
]]
-- @include check-fence
local refused = checkFence(KEYS[2], ARGV[1])
if refused ~= 0 then return refused end
local current = redis.call('HMGET', KEYS[1], 'status', 'finishNonce')
if not current[1] then return -6 end
local changed = 0
if current[1] == 'executing' then
  redis.call('HSET', KEYS[1], 'status', ARGV[2], 'result', ARGV[3], 'finishedAt', ARGV[4],
    'finishNonce', ARGV[5])
  changed = 1
elseif current[2] == ARGV[5] then
  changed = 1
end
local result = {changed}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
