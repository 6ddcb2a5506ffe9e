--[[
  withdrawDecision-2: undoes a person's decision that too few replicas confirmed (Redis WAIT), so the
  clicker can be told it was not recorded and the card keeps its buttons: the approval goes back to
  `pending` and the ledger entry that approving opened is removed. Only the call that recorded the
  decision may withdraw it (its nonce), and only while the call has not begun executing. A quorum vote
  that call counted (see decideApproval-3) is removed with it, whether or not it completed the quorum.

  KEYS[1] approval   KEYS[2] ledger
  ARGV[1] nonce of the decideApproval call that recorded the decision

  Returns 1 (withdrawn) or 0 (the decision is not that call's, or the call's execution has begun: the
  decision stands).
]]
local current = redis.call('HMGET', KEYS[1], 'status', 'decisionNonce', 'votes')

local function dropVote()
  if not current[3] then return false end
  local kept, found = {}, false
  for _, vote in ipairs(cjson.decode(current[3])) do
    if vote.nonce == ARGV[1] then found = true else kept[#kept + 1] = vote end
  end
  if not found then return false end
  if #kept == 0 then redis.call('HDEL', KEYS[1], 'votes')
  else redis.call('HSET', KEYS[1], 'votes', cjson.encode(kept)) end
  return true
end

if current[1] == 'pending' then return dropVote() and 1 or 0 end
if current[2] ~= ARGV[1] or (current[1] ~= 'approved' and current[1] ~= 'rejected') then return 0 end
local ran = redis.call('HGET', KEYS[2], 'status')
if ran and ran ~= 'approved' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending')
redis.call('HDEL', KEYS[1], 'decidedBy', 'decidedAt', 'decisionReason', 'decisionNonce')
redis.call('DEL', KEYS[2])
dropVote()
return 1
