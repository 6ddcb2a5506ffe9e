--[[
  withdrawReapproval-3: undoes an "Approve again" that too few replicas confirmed (Redis WAIT): the round
  it created is removed, so the card keeps its Approve again button and the clicker can try again. Only
  the call that created the round may withdraw it (its nonce), and only while the round has not begun
  executing.

  KEYS[1] approval of the new round   KEYS[2] ledger of the new round   KEYS[3] the run's approvals set
  ARGV[1] nonce of the reapproveCall call that created the round   ARGV[2] approval id of the new round

  Returns 1 (withdrawn) or 0 (the round is not that call's, or it has begun executing: it stands).
]]
if redis.call('HGET', KEYS[1], 'decisionNonce') ~= ARGV[1] then return 0 end
local ran = redis.call('HGET', KEYS[2], 'status')
if ran and ran ~= 'approved' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
