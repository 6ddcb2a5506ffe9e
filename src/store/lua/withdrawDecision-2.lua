--[[
  withdrawDecision-2: undoes a person's decision that too few replicas confirmed (Redis WAIT), so the
  clicker can be told it was not recorded and the card keeps its buttons: the approval goes back to
  `pending` and the ledger entry that approving opened is removed. Only the call that recorded the
  decision may withdraw it (its nonce), and only while the call has not begun executing.

  KEYS[1] approval   KEYS[2] ledger
  ARGV[1] nonce of the decideApproval call that recorded the decision

  Returns 1 (withdrawn) or 0 (the decision is not that call's, or the call's execution has begun: the
  decision stands).
]]
local current = redis.call('HMGET', KEYS[1], 'status', 'decisionNonce')
if current[2] ~= ARGV[1] or (current[1] ~= 'approved' and current[1] ~= 'rejected') then return 0 end
local ran = redis.call('HGET', KEYS[2], 'status')
if ran and ran ~= 'approved' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending')
redis.call('HDEL', KEYS[1], 'decidedBy', 'decidedAt', 'decisionReason', 'decisionNonce')
redis.call('DEL', KEYS[2])
return 1
