--[[
  pauseSlackBudget-1: Slack answered 429 with Retry-After: no process may take a slot of this budget
  before `retry after` has passed, and the burst starts empty again then.

  KEYS[1] tat (string, ms)
  ARGV[1] retry after, ms   ARGV[2] interval ms   ARGV[3] burst

  Returns the new tat.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local paused = now + tonumber(ARGV[1]) + tonumber(ARGV[3]) * tonumber(ARGV[2])
if paused > tat then
  redis.call('SET', KEYS[1], paused, 'PX', math.ceil(paused - now) + 60000)
  return paused
end
return tat
