--[[
  releaseThread-2: the thread's active run ended; hand the thread to the oldest queued job, if any.

  KEYS[1] thread's active run   KEYS[2] thread inbox
  ARGV[1] run id that ended   ARGV[2] TTL ms

  Returns the next start job JSON (the thread now waits for that job's claim), false when the thread
  is free, or -1 when the ended run was not the active one (nothing changed).
]]
local active = redis.call('GET', KEYS[1])
if active and active ~= ARGV[1] then return -1 end
local nextJob = redis.call('LPOP', KEYS[2])
if not nextJob then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('SET', KEYS[1], 'next:' .. redis.sha1hex(nextJob), 'PX', ARGV[2])
return nextJob
