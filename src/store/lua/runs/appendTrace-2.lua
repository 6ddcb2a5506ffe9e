--[[
  appendTrace-2: append trace entries to a run and keep only the newest ones. (Entries recorded
  during a step travel with its saveStep; this is for the few recorded after the last one.)

  KEYS[1] header   KEYS[2] trace
  ARGV[1] maximum length   ARGV[2..] entries JSON

  Returns the trace length, or -1 (not_found) when the run is gone (nothing is written, so a late
  trace entry cannot resurrect an expired run without a TTL).
]]
-- @include follow-header-ttl
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local length = redis.call('RPUSH', KEYS[2], unpack(ARGV, 2, #ARGV))
if length == #ARGV - 1 then followHeaderTtl(KEYS[1], KEYS[2]) end
local keep = tonumber(ARGV[1])
if length > keep then
  redis.call('LTRIM', KEYS[2], -keep, -1)
  length = keep
end
return length
