--[[
  renewLease-1: extend the lease of the holder of `fence`.

  KEYS[1] lease
  ARGV[1] fence   ARGV[2] lease time ms

  Returns 1, or -2 (lease_lost) / -3 (stale_fence).
]]
-- @include check-fence
local refused = checkFence(KEYS[1], ARGV[1])
if refused ~= 0 then return refused end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
