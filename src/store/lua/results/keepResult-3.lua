--[[
  keepResult-3: keep the whole text of one long tool result of a run for read_result, within the run's
  bound of kept bytes. Refused unless the caller holds the lease. A call keeps its text under one
  handle: a retried or recovered call writes it again, and its old text stops counting.

  KEYS[1] header   KEYS[2] results (hash: handle -> text, and `#bytes`: the bytes of all the texts)
  KEYS[3] lease
  ARGV[1] fence   ARGV[2] handle   ARGV[3] text   ARGV[4] most bytes kept for the run

  Returns the run's kept bytes after this call, or -1 (not_found), -2 (lease_lost), -3 (stale_fence),
  -10 (run_full: keeping the text would pass ARGV[4]; nothing is written).
]]
-- @include check-fence
-- @include follow-header-ttl
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local refused = checkFence(KEYS[3], ARGV[1])
if refused ~= 0 then return refused end
local old = redis.call('HSTRLEN', KEYS[2], ARGV[2])
local total = tonumber(redis.call('HGET', KEYS[2], '#bytes') or '0') - old + #ARGV[3]
if total > tonumber(ARGV[4]) then return -10 end
local created = redis.call('EXISTS', KEYS[2]) == 0
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3], '#bytes', total)
if created then followHeaderTtl(KEYS[1], KEYS[2]) end
return total
