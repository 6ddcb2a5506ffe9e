--[[
  recordFeedback-2: record one person's feedback on a run's answer, once: the first click of a person
  on a run counts, later ones (either button, or Slack's duplicate deliveries) change nothing.

  KEYS[1] header   KEYS[2] feedback (hash: user id -> JSON record)
  ARGV[1] user id   ARGV[2] the record (JSON)

  Returns {1, record} when this call recorded it, {0, stored record} when the person had already given
  feedback, or -1 (not_found: the run is gone).
]]
-- @include follow-header-ttl
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local stored = redis.call('HGET', KEYS[2], ARGV[1])
if stored then return {0, stored} end
local created = redis.call('EXISTS', KEYS[2]) == 0
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if created then followHeaderTtl(KEYS[1], KEYS[2]) end
return {1, ARGV[2]}
