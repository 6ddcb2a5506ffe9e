--[[
  reapproveCall-5: "Approve again" on a call whose approved execution ended with an unknown outcome (a
  worker died while running it) or was not started (no replica confirmed its `executing` record), or
  "Retry" on one that failed transiently and was not repeated because it may not be safe to (its ledger
  result says `"transient": true`). Creates the next round's approval record, already `approved` by the
  clicker, as a copy of the earlier round (same call, same arguments and hash), and opens its execution
  ledger entry. The first click wins: once the next round exists, later clicks change nothing.

  KEYS[1] approval of round n   KEYS[2] ledger of round n
  KEYS[3] approval of round n+1 KEYS[4] ledger of round n+1   KEYS[5] the run's approvals set
  ARGV[1] approver   ARGV[2] now (ms)   ARGV[3] nonce of this call   ARGV[4] approval id of round n+1
  ARGV[5] decision reason after an unknown outcome   ARGV[6] decision reason of a retry

  Returns {won (0|1), field, value, ...} with the round n+1 record, where `won` means this call (or an
  earlier send of it) created it; or -1 (not_found: no round n), -8 (not_unknown: round n's outcome is
  neither unknown, not started nor a transient failure, so there is nothing to approve again).
]]
-- @include follow-header-ttl
local old, oldLedger, new, newLedger, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if redis.call('EXISTS', old) == 0 then return -1 end
local won = 0
if redis.call('EXISTS', new) == 1 then
  if redis.call('HGET', new, 'decisionNonce') == ARGV[3] then won = 1 end
else
  local ledger = redis.call('HMGET', oldLedger, 'status', 'result')
  local reason = ARGV[5]
  if ledger[1] == 'failed' then
    local ok, result = pcall(cjson.decode, ledger[2] or '')
    local transient = ok and type(result) == 'table' and type(result.error) == 'table'
      and result.error.transient == true
    if not transient then return -8 end
    reason = ARGV[6]
  elseif ledger[1] ~= 'outcome_unknown' and ledger[1] ~= 'not_started' then
    return -8
  end
  redis.call('HSET', new, unpack(redis.call('HGETALL', old)))
  -- Not an edit of the earlier round, and approved by this click alone (its quorum was met before).
  redis.call('HDEL', new, 'reportedAt', 'editOf', 'editedTo', 'editNonce', 'votes')
  redis.call('HSET', new, 'approvalId', ARGV[4], 'status', 'approved', 'createdAt', ARGV[2],
    'decidedBy', ARGV[1], 'decidedAt', ARGV[2], 'decisionReason', reason, 'decisionNonce', ARGV[3])
  redis.call('HSET', newLedger, 'status', 'approved', 'attempts', 0, 'approvedAt', ARGV[2],
    'argsHash', redis.call('HGET', old, 'argsHash'))
  redis.call('SADD', set, ARGV[4])
  followHeaderTtl(old, new)
  followHeaderTtl(old, newLedger)
  won = 1
end
local result = {won}
for _, item in ipairs(redis.call('HGETALL', new)) do result[#result + 1] = item end
return result
