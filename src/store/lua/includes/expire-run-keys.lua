-- Sets a TTL of `ttlMs` on every key of a run: the given per-run keys, its kept long results, its
-- compactions, its budget ask and the feedback on its answer, plus each approval record and ledger entry listed in the run's approvals set (all share
-- the run's hash tag, built from `base`).
local function expireRunKeys(runKeys, approvalsKey, base, ttlMs)
  for _, key in ipairs(runKeys) do
    redis.call('PEXPIRE', key, ttlMs)
  end
  redis.call('PEXPIRE', base .. 'results', ttlMs)
  redis.call('PEXPIRE', base .. 'compactions', ttlMs)
  redis.call('PEXPIRE', base .. 'feedback', ttlMs)
  redis.call('PEXPIRE', base .. 'budget-ask', ttlMs)
  for _, id in ipairs(redis.call('SMEMBERS', approvalsKey)) do
    redis.call('PEXPIRE', base .. 'approval:' .. id, ttlMs)
    redis.call('PEXPIRE', base .. 'ledger:' .. id, ttlMs)
  end
  redis.call('PEXPIRE', approvalsKey, ttlMs)
end
