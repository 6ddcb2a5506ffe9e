--[[
  releaseThread-3: the thread's active run ended. Records its turns in the thread's history and hands
  the thread to the oldest queued job, if any. A run that is not the active one changes nothing, so a
  recovered job cannot append its turns twice.

  The handed job stays first in the inbox until its own claim takes the thread (claimThread removes it),
  and the thread is marked `next:<sha1 of the job>:<ended run id>`. So when the worker dies between this
  release and starting the job, the ended run's recovered job releases again and gets the same job back
  to start (its job id makes a second start harmless): the queued message is not lost.

  KEYS[1] thread's active run   KEYS[2] thread inbox   KEYS[3] thread history
  ARGV[1] run id that ended   ARGV[2] TTL ms of the keys   ARGV[3] turns kept in the history
  ARGV[4] how long a queued job may take to claim the thread (ms)   ARGV[5..] turns to append (JSON)

  Returns the next start job JSON (the thread now waits for that job's claim), false when the thread
  is free, or -1 when the ended run was not the active one (and handed nothing over).
]]
local active = redis.call('GET', KEYS[1])
local function handedTo(job)
  return 'next:' .. redis.sha1hex(job) .. ':' .. ARGV[1]
end
if active ~= ARGV[1] then
  local waiting = redis.call('LINDEX', KEYS[2], 0)
  if active and waiting and active == handedTo(waiting) then return waiting end
  return -1
end
if #ARGV > 4 then
  redis.call('RPUSH', KEYS[3], unpack(ARGV, 5))
  redis.call('LTRIM', KEYS[3], -tonumber(ARGV[3]), -1)
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
local nextJob = redis.call('LINDEX', KEYS[2], 0)
if not nextJob then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('SET', KEYS[1], handedTo(nextJob), 'PX', ARGV[4])
return nextJob
