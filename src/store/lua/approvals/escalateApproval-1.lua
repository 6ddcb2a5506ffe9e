--[[
  escalateApproval-1: an approval still pending when its escalation is due gets its escalation approvers
  (the caller merged them into the approver list) and the time it escalated. Once only; a decided
  approval is left as it is.

  KEYS[1] approval
  ARGV[1] approvers JSON after the escalation   ARGV[2] now (ms)

  Returns {changed (0|1), field, value, ...} with the record as stored now, or -1 (not_found).
]]
local current = redis.call('HMGET', KEYS[1], 'status', 'escalatedAt')
if not current[1] then return -1 end
local changed = 0
if current[1] == 'pending' and not current[2] then
  redis.call('HSET', KEYS[1], 'approvers', ARGV[1], 'escalatedAt', ARGV[2])
  changed = 1
end
local result = {changed}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
