--[[
  blockExecution-2: the plan check immediately before execution stopped an approved call (its plan
  changed since approval, or could not be computed): `approved | not_started | plan_blocked ->
  plan_blocked`, with the result the model reads and both plans' hashes, if the caller holds the run's
  lease. Nothing ran. An entry that began executing (or ended) is left as it is: it was not planned.

  KEYS[1] ledger   KEYS[2] lease
  ARGV[1] fence   ARGV[2] result JSON   ARGV[3] now (ms)
  ARGV[4] hash of the approved plan ('' for none)   ARGV[5] hash of the current plan ('' when it failed)

  Returns {changed (0|1), field, value, ...}, or -2 (lease_lost), -3 (stale_fence), -6 (not_approved:
  there is no ledger entry).
]]
-- @include check-fence
local refused = checkFence(KEYS[2], ARGV[1])
if refused ~= 0 then return refused end
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -6 end
local changed = 0
if status == 'approved' or status == 'not_started' or status == 'plan_blocked' then
  redis.call('HSET', KEYS[1], 'status', 'plan_blocked', 'result', ARGV[2], 'finishedAt', ARGV[3],
    'approvedPlanHash', ARGV[4], 'currentPlanHash', ARGV[5])
  changed = 1
end
local result = {changed}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
