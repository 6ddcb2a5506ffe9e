--[[
  acquireLease-2: take the run's lease when nobody holds it, with a new fencing token.
  Tokens come from the header's `fence` counter, so they only ever grow for a run.

  KEYS[1] header   KEYS[2] lease
  ARGV[1] holder (a worker/job id, for diagnostics)
  ARGV[2] lease time ms
  ARGV[3] nonce of this call (a resend of the same call after a lost reply gets the same token)

  Returns {token, holder, remainingMs}: token > 0 when acquired; {-4 (busy), holder, remainingMs}
  when someone else holds it; -1 (not_found) when the run does not exist.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local current = redis.call('HMGET', KEYS[2], 'token', 'holder', 'nonce')
if current[1] then
  local remaining = redis.call('PTTL', KEYS[2])
  if current[3] == ARGV[3] then return {tonumber(current[1]), current[2], remaining} end
  return {-4, current[2], remaining}
end
local token = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[2], 'token', token, 'holder', ARGV[1], 'nonce', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {token, ARGV[1], tonumber(ARGV[2])}
