--[[
  createApprovals-3: store the approval records of one pause (all gated calls of a turn) at once,
  if the caller holds the run's lease. Records that already exist are left untouched, so writing the
  same pause twice (a redelivered job) neither duplicates nor resets a decision. A record created already
  `approved` (by a policy rule or a grant) opens its call's execution ledger entry at once, as a click's
  decision would (decideApproval-3), so it runs through the same ledger.

  KEYS[1] header   KEYS[2] lease   KEYS[3] approvals set
  ARGV[1] fence   ARGV[2] run key base `<p>:run:{<runId>}:`
  ARGV[3..] per approval: approval id, number k of the field/value items that follow, then k items

  Returns, per approval in input order, {created (0|1), field, value, ...} with the record as stored
  now; or -1 (not_found), -2 (lease_lost), -3 (stale_fence).
]]
-- @include check-fence
-- @include follow-header-ttl
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local refused = checkFence(KEYS[2], ARGV[1])
if refused ~= 0 then return refused end
local result, i = {}, 3
while i <= #ARGV do
  local id, k = ARGV[i], tonumber(ARGV[i + 1])
  local key = ARGV[2] .. 'approval:' .. id
  local created = 0
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, unpack(ARGV, i + 2, i + 1 + k))
    redis.call('SADD', KEYS[3], id)
    followHeaderTtl(KEYS[1], key)
    if redis.call('HGET', key, 'status') == 'approved' then
      local ledger = ARGV[2] .. 'ledger:' .. id
      redis.call('HSET', ledger, 'status', 'approved', 'attempts', 0,
        'approvedAt', redis.call('HGET', key, 'decidedAt'), 'argsHash', redis.call('HGET', key, 'argsHash'))
      followHeaderTtl(KEYS[1], ledger)
    end
    created = 1
  end
  local entry = {created}
  for _, item in ipairs(redis.call('HGETALL', key)) do entry[#entry + 1] = item end
  result[#result + 1] = entry
  i = i + 2 + k
end
followHeaderTtl(KEYS[1], KEYS[3])
return result
