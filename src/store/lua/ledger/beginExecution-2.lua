--[[
  beginExecution-2: compare-and-set a gated call's ledger entry `approved -> executing` before its
  side effect, if the caller holds the run's lease. An entry `not_started` (an earlier attempt stopped
  before the side effect: its `executing` record was not confirmed by a replica) or `plan_blocked` (an
  earlier plan check stopped it, and the plan is the approved one again) starts like an approved one. Anything else returns the entry unchanged, so an approved call starts at most once. With ARGV[4] =
  '1' (an idempotent tool after a crash) an entry left `executing` or `outcome_unknown` may start again.

  KEYS[1] ledger   KEYS[2] lease
  ARGV[1] fence   ARGV[2] now (ms)
  ARGV[3] nonce of this call (a resend after a lost reply is recognised as the call that began it)
  ARGV[4] '1' to allow a retry of an entry left executing/outcome_unknown, else '0'
  ARGV[5] hash of the arguments about to be executed: must equal the approved one
  ARGV[6] hash of the approved plan, ARGV[7] of the plan current now ('' when the tool has no plan)

  Returns {began (0|1), field, value, ...}, or -2 (lease_lost), -3 (stale_fence), -6 (not_approved:
  there is no ledger entry), -7 (args_mismatch: these are not the arguments that were approved).
]]
-- @include check-fence
local refused = checkFence(KEYS[2], ARGV[1])
if refused ~= 0 then return refused end
local current = redis.call('HMGET', KEYS[1], 'status', 'beginNonce', 'argsHash')
if not current[1] then return -6 end
if current[3] ~= ARGV[5] then return -7 end
local status, began = current[1], 0
if status == 'executing' and current[2] == ARGV[3] then
  began = 1
elseif status == 'approved' or status == 'not_started' or status == 'plan_blocked'
    or (ARGV[4] == '1' and (status == 'executing' or status == 'outcome_unknown')) then
  redis.call('HSET', KEYS[1], 'status', 'executing', 'startedAt', ARGV[2], 'fence', ARGV[1],
    'beginNonce', ARGV[3])
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'approvedPlanHash', ARGV[6]) end
  if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'currentPlanHash', ARGV[7]) end
  began = 1
end
local result = {began}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
