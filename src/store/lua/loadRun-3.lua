--[[
  loadRun-3: read a run's header, messages and evidence in one consistent snapshot. The list elements
  are joined here into one JSON array text each: one reply string to parse instead of one per message.

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence

  Returns {headerFieldsAndValues, messagesJsonArray, evidenceJsonArray}, or -1 (not_found) when the run
  does not exist.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
return {
  redis.call('HGETALL', KEYS[1]),
  '[' .. table.concat(redis.call('LRANGE', KEYS[2], 0, -1), ',') .. ']',
  '[' .. table.concat(redis.call('LRANGE', KEYS[3], 0, -1), ',') .. ']',
}
