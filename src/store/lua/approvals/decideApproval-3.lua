--[[
  decideApproval-3: compare-and-set an approval from `pending` to a decision; the first decision
  wins. A decision (other than expired/cancelled) arriving at or after `expiresAt` expires the approval
  instead. Approving also opens the call's execution ledger entry with status `approved` and the approved
  arguments' hash. A person's decision (approved/rejected) on a pending approval of a run that has ended
  (its final save is stored; cancelApprovals may not have run yet) is refused: nothing would run it.

  Quorum: an approval whose `quorum` field is N > 1 needs N approvals by distinct people. Each person's
  approval is added to `votes` (JSON [{by, at, nonce}]); it stays `pending` until the Nth distinct one,
  which approves it (and opens the ledger) in this same step, so execution can start only once. The same
  person approving again is not counted. A single rejection rejects it.

  KEYS[1] approval   KEYS[2] ledger   KEYS[3] the run's header (same hash tag)
  ARGV[1] decision: approved | rejected | expired | cancelled
  ARGV[2] decided by ('' for the system)   ARGV[3] reason ('' for none)   ARGV[4] now (ms)
  ARGV[5] nonce of this call (a resend after a lost reply is recognised as the call that changed it)
  ARGV[6] quorum in force ('' for the stored one): when a change freeze changed the rule since the
          approval was asked, the bot counts a person's approval against the new rule's quorum (not
          stored: once the freeze ends, the quorum asked applies again)

  Returns {changed (0|1), won (0|1), vote (0|1|2), field, value, ...} where `changed` means this call
  moved the record out of `pending` (to its decision, or to `expired` when too late), `won` means it
  moved it to this call's decision, and `vote` is 1 when this call's approval was counted towards a
  quorum (whether or not it completed it), 2 when this person had approved already (nothing changed);
  or -1 (not_found), or -9 (run_ended: the run is completed, failed, stopped or cancelled, and the
  approval is left as it is).
]]
-- @include follow-header-ttl
local approval, ledger, header = KEYS[1], KEYS[2], KEYS[3]
local current = redis.call('HMGET', approval, 'status', 'expiresAt', 'decisionNonce', 'quorum', 'votes')
if not current[1] then return -1 end
local decision, by, now, nonce = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local ENDED = {completed = true, failed = true, stopped = true, cancelled = true}
if current[1] == 'pending' and (decision == 'approved' or decision == 'rejected')
    and ENDED[redis.call('HGET', header, 'status')] then
  return -9
end

local function reply(changed, won, vote)
  local result = {changed, won, vote}
  for _, item in ipairs(redis.call('HGETALL', approval)) do result[#result + 1] = item end
  return result
end

local function decide(status, reason)
  redis.call('HSET', approval, 'status', status, 'decidedBy', by, 'decidedAt', now,
    'decisionReason', reason, 'decisionNonce', nonce)
  if status == 'approved' then
    redis.call('HSET', ledger, 'status', 'approved', 'attempts', 0, 'approvedAt', now,
      'argsHash', redis.call('HGET', approval, 'argsHash'))
    followHeaderTtl(approval, ledger)
  end
end

if current[1] ~= 'pending' then
  if current[3] == nonce then return reply(1, current[1] == decision and 1 or 0, 0) end
  return reply(0, 0, 0)
end
if decision ~= 'expired' and decision ~= 'cancelled' and tonumber(now) >= tonumber(current[2]) then
  redis.call('HSET', approval, 'status', 'expired', 'decidedBy', '', 'decidedAt', now,
    'decisionReason', 'expired before the decision arrived', 'decisionNonce', nonce)
  return reply(1, 0, 0)
end
local quorum = tonumber(current[4] or '1') or 1
if decision == 'approved' and by ~= '' and ARGV[6] and ARGV[6] ~= '' then
  quorum = tonumber(ARGV[6])
end
if decision == 'approved' and by ~= '' and quorum > 1 then
  local votes = {}
  if current[5] then votes = cjson.decode(current[5]) end
  for _, vote in ipairs(votes) do
    if vote.by == by then return reply(0, 0, vote.nonce == nonce and 1 or 2) end
  end
  votes[#votes + 1] = {by = by, at = tonumber(now), nonce = nonce}
  redis.call('HSET', approval, 'votes', cjson.encode(votes))
  if #votes < quorum then return reply(0, 0, 1) end
  decide('approved', ARGV[3])
  return reply(1, 1, 1)
end
decide(decision, ARGV[3])
return reply(1, 1, 0)
