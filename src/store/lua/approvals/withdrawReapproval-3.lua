--[[
  withdrawReapproval-3: undoes an "Approve again" click that too few replicas confirmed (Redis WAIT), so
  the card keeps its Approve again button and the clicker can try again. Only the call that made the
  change may withdraw it (its nonce), and only while the round has not begun executing. The click's vote
  is removed (a round approved by it goes back to `pending` with the votes before it, and its ledger
  entry is removed); a round left without votes is removed altogether.

  KEYS[1] approval of the new round   KEYS[2] ledger of the new round   KEYS[3] the run's approvals set
  ARGV[1] nonce of the reapproveCall call   ARGV[2] approval id of the new round

  Returns 1 (withdrawn) or 0 (the change is not that call's, or the round has begun executing: it stands).
]]
local current = redis.call('HMGET', KEYS[1], 'status', 'decisionNonce', 'votes')
if not current[1] then return 0 end
local ran = redis.call('HGET', KEYS[2], 'status')
if ran and ran ~= 'approved' then return 0 end
local kept, found = {}, false
if current[3] then
  for _, vote in ipairs(cjson.decode(current[3])) do
    if vote.nonce == ARGV[1] then found = true else kept[#kept + 1] = vote end
  end
end
if current[2] ~= ARGV[1] and not found then return 0 end
if #kept == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.call('SREM', KEYS[3], ARGV[2])
  return 1
end
redis.call('HSET', KEYS[1], 'status', 'pending', 'votes', cjson.encode(kept))
redis.call('HDEL', KEYS[1], 'decidedBy', 'decidedAt', 'decisionReason', 'decisionNonce')
redis.call('DEL', KEYS[2])
return 1
