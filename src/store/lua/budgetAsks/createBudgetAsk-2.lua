--[[
  createBudgetAsk-2: store a run's ask for more budget (one record per run, the latest round). Writing
  the same round again (a recovered job) changes nothing; a later round replaces an earlier, decided one.
  The record lives as long as the run's header (its TTL copied; finishing the run re-expires both).

  KEYS[1] run header
  KEYS[2] budget ask record
  ARGV[1] round   ARGV[2] reason   ARGV[3] offer JSON   ARGV[4] stop message
  ARGV[5] requester   ARGV[6] createdAt (ms)   ARGV[7] expiresAt (ms)

  Returns {field, value, ...} of the record as stored now; or -1 (not_found: no such run).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'round') or '0')
if stored < tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'round', ARGV[1], 'reason', ARGV[2], 'offer', ARGV[3], 'message', ARGV[4],
    'requester', ARGV[5], 'createdAt', ARGV[6], 'expiresAt', ARGV[7], 'status', 'pending')
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return redis.call('HGETALL', KEYS[2])
