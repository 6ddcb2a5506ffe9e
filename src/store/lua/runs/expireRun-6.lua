--[[
  expireRun-6: set a TTL on every key of a run (retention), whatever its status; used for runs that
  end outside saveStep (e.g. cancelled while paused) and by operators.

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence   KEYS[4] lease   KEYS[5] trace
  KEYS[6] approvals set
  ARGV[1] TTL ms   ARGV[2] run key base `<p>:run:{<runId>}:`

  Returns 1, or -1 (not_found).
]]
-- @include expire-run-keys
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
expireRunKeys({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, KEYS[6], ARGV[2], tonumber(ARGV[1]))
return 1
