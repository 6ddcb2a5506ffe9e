-- Returns 0 when `fence` is the token of the live lease at `leaseKey`, else -2 (lease_lost: nobody
-- holds it) or -3 (stale_fence: someone acquired it after the caller).
local function checkFence(leaseKey, fence)
  local token = redis.call('HGET', leaseKey, 'token')
  if not token then return -2 end
  if token ~= fence then return -3 end
  return 0
end
