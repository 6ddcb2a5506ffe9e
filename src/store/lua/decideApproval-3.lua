--[[
  decideApproval-3: compare-and-set an approval from `pending` to a decision; the first decision
  wins. A decision (other than expired/cancelled) arriving at or after `expiresAt` expires the approval
  instead. Approving also opens the call's execution ledger entry with status `approved` and the approved
  arguments' hash. A person's decision (approved/rejected) on a pending approval of a run that has ended
  (its final save is stored; cancelApprovals may not have run yet) is refused: nothing would run it.

  KEYS[1] approval   KEYS[2] ledger   KEYS[3] the run's header (same hash tag)
  ARGV[1] decision: approved | rejected | expired | cancelled
  ARGV[2] decided by ('' for the system)   ARGV[3] reason ('' for none)   ARGV[4] now (ms)
  ARGV[5] nonce of this call (a resend after a lost reply is recognised as the call that changed it)

  Returns {changed (0|1), won (0|1), field, value, ...} where `changed` means this call moved the
  record out of `pending` (to its decision, or to `expired` when too late) and `won` means it moved it
  to this call's decision; or -1 (not_found), or -9 (run_ended: the run is completed, failed, stopped or
  cancelled, and the approval is left as it is).
]]
-- @include follow-header-ttl
local approval, ledger, header = KEYS[1], KEYS[2], KEYS[3]
local current = redis.call('HMGET', approval, 'status', 'expiresAt', 'decisionNonce')
if not current[1] then return -1 end
local decision, now = ARGV[1], ARGV[4]
local ENDED = {completed = true, failed = true, stopped = true, cancelled = true}
if current[1] == 'pending' and (decision == 'approved' or decision == 'rejected')
    and ENDED[redis.call('HGET', header, 'status')] then
  return -9
end
local changed, won = 0, 0
if current[1] == 'pending' then
  if decision ~= 'expired' and decision ~= 'cancelled' and tonumber(now) >= tonumber(current[2]) then
    redis.call('HSET', approval, 'status', 'expired', 'decidedBy', '', 'decidedAt', now,
      'decisionReason', 'expired before the decision arrived', 'decisionNonce', ARGV[5])
    changed = 1
  else
    redis.call('HSET', approval, 'status', decision, 'decidedBy', ARGV[2], 'decidedAt', now,
      'decisionReason', ARGV[3], 'decisionNonce', ARGV[5])
    changed, won = 1, 1
    if decision == 'approved' then
      redis.call('HSET', ledger, 'status', 'approved', 'attempts', 0, 'approvedAt', now,
        'argsHash', redis.call('HGET', approval, 'argsHash'))
      followHeaderTtl(approval, ledger)
    end
  end
elseif current[3] == ARGV[5] then
  changed = 1
  if current[1] == decision then won = 1 end
end
local result = {changed, won}
for _, item in ipairs(redis.call('HGETALL', approval)) do result[#result + 1] = item end
return result
