--[[
  claimThread-2: make a run the active run of its Slack thread, or queue its start job behind the
  thread's active run. Atomic with releaseThread, so a queued message is never left behind.

  KEYS[1] thread's active run (string)   KEYS[2] thread inbox (list of start job JSON)
  ARGV[1] run id   ARGV[2] start job JSON (canonical)   ARGV[3] TTL ms of both keys
  ARGV[4] a run id the caller found finished (or gone) while still marked active: it may be replaced;
          '' for none
  ARGV[5] how many jobs the inbox may hold: a job beyond that is not queued (and the inbox, never
          longer than that, is all this script reads)

  The active value is a run id, or `next:<sha1 of a job>:<run id>` while releaseThread hands the thread
  to that queued job (still first in the inbox); that job's own claim then takes it.
  Returns 1 when the run is (now or already) the thread's active run, 0 when its job was queued (now or
  already), 2 when the inbox is full and the job was not queued.
]]
local active = redis.call('GET', KEYS[1])
if not active or active == ARGV[1] or string.sub(active, 1, 46) == 'next:' .. redis.sha1hex(ARGV[2]) .. ':'
    or (ARGV[4] ~= '' and active == ARGV[4]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
  redis.call('LREM', KEYS[2], 0, ARGV[2])
  return 1
end
local max = tonumber(ARGV[5])
for _, queued in ipairs(redis.call('LRANGE', KEYS[2], 0, max - 1)) do
  if queued == ARGV[2] then return 0 end
end
if redis.call('LLEN', KEYS[2]) >= max then return 2 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 0
