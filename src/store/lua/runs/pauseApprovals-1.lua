--[[
  pauseApprovals-1: the approval records named by a run header's `pause` field (the approvals of the
  gated calls still pending in the saved state, with any decision recorded on them). A round an approver
  edited is followed to its latest round (`editedTo`), whose decision is the one that counts. Read-only.
  loadRun sends it with EVAL inside its MULTI, so it reads the same snapshot as the rest of the load
  and never meets a missing EVALSHA cache inside the transaction.

  KEYS[1] header
  ARGV[1] run key base `<p>:run:{<runId>}:`

  Returns {{field, value, ...} per named approval (empty for one not created yet)}.
]]
local approvals = {}
local pause = redis.call('HGET', KEYS[1], 'pause')
if pause then
  for id in string.gmatch(pause, '%S+') do
    local key = ARGV[1] .. 'approval:' .. id
    local hops, after = 0, redis.call('HGET', key, 'editedTo')
    while after and hops < 100 do
      key = ARGV[1] .. 'approval:' .. after
      after = redis.call('HGET', key, 'editedTo')
      hops = hops + 1
    end
    approvals[#approvals + 1] = redis.call('HGETALL', key)
  end
end
return approvals
