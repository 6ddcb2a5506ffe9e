--[[
  reapproveCall-5: "Approve again" on a call whose approved execution ended with an unknown outcome (a
  worker died while running it) or was not started (no replica confirmed its `executing` record), or
  "Retry" on one that failed transiently and was not repeated because it may not be safe to (its ledger
  result says `"transient": true`). Creates the next round's approval record as a copy of the earlier
  round (same call, same arguments and hash), and approves it with the same quorum as the earlier round:
  with quorum 1 the click approves it (and opens its execution ledger entry) at once; with quorum N > 1
  the round stays `pending` and collects distinct approvers' clicks in `votes` (like decideApproval-3),
  approved by the Nth. A collection not completed within the earlier round's time (its expiresAt less its
  createdAt) starts again from the click that finds it late. Once the round is approved, later clicks
  change nothing.

  KEYS[1] approval of round n   KEYS[2] ledger of round n
  KEYS[3] approval of round n+1 KEYS[4] ledger of round n+1   KEYS[5] the run's approvals set
  ARGV[1] approver   ARGV[2] now (ms)   ARGV[3] nonce of this call   ARGV[4] approval id of round n+1
  ARGV[5] decision reason after an unknown outcome   ARGV[6] decision reason of a retry

  Returns {won (0|1), vote (0|1|2), field, value, ...} with the round n+1 record, where `won` means this
  call (or an earlier send of it) approved it, and `vote` is 1 when this call's click was counted towards
  a quorum, 2 when this person had approved it again already (nothing changed); or -1 (not_found: no
  round n), -8 (not_unknown: round n's outcome is neither unknown, not started nor a transient failure,
  so there is nothing to approve again).
]]
-- @include follow-header-ttl
local old, oldLedger, new, newLedger, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local by, now, nonce = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', old) == 0 then return -1 end

local function reply(won, vote)
  local result = {won, vote}
  for _, item in ipairs(redis.call('HGETALL', new)) do result[#result + 1] = item end
  return result
end

local function approve(reason)
  redis.call('HSET', new, 'status', 'approved', 'decidedBy', by, 'decidedAt', now,
    'decisionReason', reason, 'decisionNonce', nonce)
  redis.call('HSET', newLedger, 'status', 'approved', 'attempts', 0, 'approvedAt', now,
    'argsHash', redis.call('HGET', old, 'argsHash'))
  followHeaderTtl(old, newLedger)
end

-- Why round n may be run again (nil: it may not), from its ledger entry.
local function againReason()
  local ledger = redis.call('HMGET', oldLedger, 'status', 'result')
  if ledger[1] == 'failed' then
    local ok, result = pcall(cjson.decode, ledger[2] or '')
    local transient = ok and type(result) == 'table' and type(result.error) == 'table'
      and result.error.transient == true
    return transient and ARGV[6] or nil
  end
  if ledger[1] == 'outcome_unknown' or ledger[1] == 'not_started' then return ARGV[5] end
  return nil
end

local quorum = tonumber(redis.call('HGET', old, 'quorum') or '1') or 1
local span = tonumber(redis.call('HGET', old, 'expiresAt')) - tonumber(redis.call('HGET', old, 'createdAt'))

if redis.call('EXISTS', new) == 1 then
  local current = redis.call('HMGET', new, 'status', 'decisionNonce', 'votes', 'expiresAt')
  if current[2] == nonce then return reply(1, quorum > 1 and 1 or 0) end
  if current[1] ~= 'pending' then return reply(0, 0) end
  local votes = {}
  if current[3] and tonumber(now) < tonumber(current[4]) then votes = cjson.decode(current[3]) end
  if #votes == 0 then
    -- The collection ran out of time: it starts again from this click.
    redis.call('HSET', new, 'createdAt', now, 'expiresAt', tonumber(now) + span)
  end
  for _, vote in ipairs(votes) do
    if vote.by == by then return reply(0, vote.nonce == nonce and 1 or 2) end
  end
  votes[#votes + 1] = {by = by, at = tonumber(now), nonce = nonce}
  redis.call('HSET', new, 'votes', cjson.encode(votes))
  if #votes < quorum then return reply(0, 1) end
  approve(againReason() or ARGV[5])
  return reply(1, 1)
end

local reason = againReason()
if not reason then return -8 end
redis.call('HSET', new, unpack(redis.call('HGETALL', old)))
-- Not an edit of the earlier round, and none of its votes count: running it again needs its quorum anew.
redis.call('HDEL', new, 'reportedAt', 'editOf', 'editedTo', 'editNonce', 'votes', 'decidedBy', 'decidedAt',
  'decisionReason', 'decisionNonce')
redis.call('HSET', new, 'approvalId', ARGV[4], 'createdAt', now, 'expiresAt', tonumber(now) + span)
redis.call('SADD', set, ARGV[4])
followHeaderTtl(old, new)
if quorum > 1 then
  redis.call('HSET', new, 'status', 'pending', 'votes', cjson.encode({{by = by, at = tonumber(now), nonce = nonce}}))
  return reply(0, 1)
end
approve(reason)
return reply(1, 0)
