--[[
  withdrawEdit-4: undoes an edit that too few replicas confirmed (Redis WAIT): the round it created is
  removed and the edited round is pending again, so the approver can be told it was not recorded. Only the
  call that made the edit may withdraw it (its nonce), and only while the new round has not begun executing.

  KEYS[1] approval of round n   KEYS[2] approval of round n+1   KEYS[3] ledger of round n+1
  KEYS[4] the run's approvals set
  ARGV[1] nonce of the editApproval call   ARGV[2] approval id of round n+1

  Returns 1 (withdrawn) or 0 (not that call's edit, or its round began executing: it stands).
]]
if redis.call('HGET', KEYS[2], 'editNonce') ~= ARGV[1] then return 0 end
local ran = redis.call('HGET', KEYS[3], 'status')
if ran and ran ~= 'approved' then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[2])
if redis.call('HGET', KEYS[1], 'decisionNonce') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'status', 'pending')
  redis.call('HDEL', KEYS[1], 'decidedBy', 'decidedAt', 'decisionReason', 'decisionNonce', 'editedTo')
end
return 1
