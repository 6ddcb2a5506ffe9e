--[[
  releaseLease-1: give the lease up, only when `fence` still holds it.

  KEYS[1] lease
  ARGV[1] fence

  Returns 1 when released, 0 when the caller did not hold it (expired, or taken by someone else).
]]
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
