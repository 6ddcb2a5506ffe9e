--[[
  commentFeedback-2: add (or replace) the comment of a person's recorded feedback on a run. The value
  and the time of the click stay as they were.

  KEYS[1] header   KEYS[2] feedback (hash: user id -> JSON record)
  ARGV[1] user id   ARGV[2] comment   ARGV[3] time of the comment (ms)

  Returns the updated record, or -1 (not_found: the run is gone), -13 (no_feedback: the person gave no
  feedback on this run).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local stored = redis.call('HGET', KEYS[2], ARGV[1])
if not stored then return -13 end
local record = cjson.decode(stored)
record['comment'] = ARGV[2]
record['commentedAt'] = tonumber(ARGV[3])
local updated = cjson.encode(record)
redis.call('HSET', KEYS[2], ARGV[1], updated)
return updated
