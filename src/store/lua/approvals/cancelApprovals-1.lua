--[[
  cancelApprovals-1: move every still-pending approval of a run to `cancelled` (run cancelled).
  Decided approvals keep their decision.

  KEYS[1] approvals set
  ARGV[1] run key base `<p>:run:{<runId>}:`   ARGV[2] cancelled by   ARGV[3] reason   ARGV[4] now (ms)

  Returns the ids of the approvals this call cancelled.
]]
local cancelled = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. 'approval:' .. id
  if redis.call('HGET', key, 'status') == 'pending' then
    redis.call('HSET', key, 'status', 'cancelled', 'decidedBy', ARGV[2], 'decidedAt', ARGV[4],
      'decisionReason', ARGV[3])
    cancelled[#cancelled + 1] = id
  end
end
return cancelled
